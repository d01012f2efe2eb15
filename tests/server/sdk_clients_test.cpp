// The official clients against `k3 serve` on tiny-k3: npm `openai` 6.x (chat, completions,
// responses) and `@anthropic-ai/sdk` (messages). The checks live in tests/node/*.mjs. Skipped,
// with the reason, when node or the package is missing (scripts/install-test-deps.sh installs them).
#include <gtest/gtest.h>

#include <string>

#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

// Runs tests/node/SCRIPT K3 MODEL TEMPLATE; fails with its output unless it exits 0.
void run_node_checks(const std::string& script, const std::string& package) {
    if (const std::string why = node_test_unavailable({package}); !why.empty()) GTEST_SKIP() << why;
    const NodeTestResult result =
        run_node_test(script, {fixture("tiny-k3/model.gguf"), fixture("chat/templates/Kimi-K3.jinja")});
    EXPECT_EQ(result.status, 0) << result.out;
}

TEST(OpenAIClient, ChatStreamingToolsAbortAndErrors) { run_node_checks("openai_server_test.mjs", "openai"); }

TEST(OpenAIClient, Responses) { run_node_checks("responses_server_test.mjs", "openai"); }

TEST(AnthropicClient, Messages) { run_node_checks("anthropic_server_test.mjs", "@anthropic-ai/sdk"); }

}  // namespace
}  // namespace k3::testing
