// The official clients against `k3 serve` on tiny-k3: npm `openai` 6.x (chat, completions,
// responses) and `@anthropic-ai/sdk` (messages). The checks live in tests/node/*.mjs. Skipped,
// with the reason, when node or the package is missing (scripts/install-test-deps.sh installs them).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace k3::testing {
namespace {

// Runs tests/node/SCRIPT K3 MODEL TEMPLATE; fails with its output unless it exits 0.
void run_node_checks(const std::string& script, const std::string& package) {
    const std::string node_dir = std::string(K3_SOURCE_DIR) + "/tests/node";
    if (std::system("node --version > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "node is not installed (scripts/install-deps.sh installs nodejs)";
    if (!std::filesystem::exists(node_dir + "/node_modules/" + package + "/package.json"))
        GTEST_SKIP() << "npm package " << package << " missing: run scripts/install-test-deps.sh";
    const std::string command = "node '" + node_dir + "/" + script + "' '" + K3_BINARY + "' '" +
                                fixture("tiny-k3/model.gguf") + "' '" + fixture("chat/templates/Kimi-K3.jinja") +
                                "' 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[4096];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
    const int status = pclose(pipe);
    EXPECT_EQ(status, 0) << output;
}

TEST(OpenAIClient, ChatStreamingToolsAbortAndErrors) { run_node_checks("openai_server_test.mjs", "openai"); }

TEST(OpenAIClient, Responses) { run_node_checks("responses_server_test.mjs", "openai"); }

TEST(AnthropicClient, Messages) { run_node_checks("anthropic_server_test.mjs", "@anthropic-ai/sdk"); }

}  // namespace
}  // namespace k3::testing
