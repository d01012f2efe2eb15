// The official OpenAI client (npm `openai` 6.x, tests/node) against `k3 serve` on tiny-k3: the
// checks live in tests/node/openai_server_test.mjs. Skipped, with the reason, when node or the
// package is missing (scripts/install-test-deps.sh installs it).
#include <gtest/gtest.h>

#include <string>

#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

TEST(OpenAIClient, ChatStreamingToolsAbortAndErrors) {
    if (const std::string why = node_test_unavailable({"openai"}); !why.empty()) GTEST_SKIP() << why;
    const NodeTestResult result = run_node_test("openai_server_test.mjs", {fixture("tiny-k3/model.gguf")});
    EXPECT_EQ(result.status, 0) << result.out;
}

}  // namespace
}  // namespace k3::testing
