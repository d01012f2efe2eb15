// The official OpenAI client (npm `openai` 6.x, tests/node) against `k3 serve` on tiny-k3: the
// checks live in tests/node/openai_server_test.mjs. Skipped, with the reason, when node or the
// package is missing (scripts/install-test-deps.sh installs it).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace k3::testing {
namespace {

TEST(OpenAIClient, ChatStreamingToolsAbortAndErrors) {
    const std::string node_dir = std::string(K3_SOURCE_DIR) + "/tests/node";
    if (std::system("node --version > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "node is not installed (scripts/install-deps.sh installs nodejs)";
    if (!std::filesystem::exists(node_dir + "/node_modules/openai/package.json"))
        GTEST_SKIP() << "npm package openai missing: run scripts/install-test-deps.sh";
    const std::string command = "node '" + node_dir + "/openai_server_test.mjs' '" + K3_BINARY + "' '" +
                                fixture("tiny-k3/model.gguf") + "' 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[4096];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
    const int status = pclose(pipe);
    EXPECT_EQ(status, 0) << output;
}

}  // namespace
}  // namespace k3::testing
