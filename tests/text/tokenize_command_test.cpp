// `k3 tokenize` and `k3 detokenize` on the fixture vocabulary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace k3::text {
namespace {

using k3::testing::run_k3;

const std::string& model() {
    static const std::string path = k3::testing::fixture("tiny-k3/model.gguf");
    return path;
}

TEST(TokenizeCommand, PrintsTheReferenceIdsForEveryFixtureCase) {
    const auto cases = nlohmann::json::parse(
        k3::testing::read_text(k3::testing::fixture("tokenizer/tokenizer_cases.json")))["cases"];
    k3::testing::ScratchDir scratch;
    for (const auto& c : cases) {
        const std::string text = c["text"];
        const std::string path = scratch.file("text.txt");
        k3::testing::write_bytes(path, text.data(), text.size());
        auto plain = run_k3({"tokenize", "-m", model(), "--file", path});
        ASSERT_EQ(plain.exit_code, 0) << plain.err;
        EXPECT_EQ(nlohmann::json::parse(plain.out), c["ids"]) << text;
        if (c["ids_parse_special"] == c["ids"]) continue;  // one run per case where that tells nothing
        auto special = run_k3({"tokenize", "-m", model(), "--parse-special", "--file", path});
        ASSERT_EQ(special.exit_code, 0) << special.err;
        EXPECT_EQ(nlohmann::json::parse(special.out), c["ids_parse_special"]) << text;
    }
}

TEST(TokenizeCommand, TextArgumentAndStdin) {
    auto r = run_k3({"tokenize", "-m", model(), "Hello, World!"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[403,44,355,430,33]\n");  // tokenizer_cases.json
    r = run_k3({"tokenize", "-m", model(), "--file", "-"}, "Hello, World!");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[403,44,355,430,33]\n");
}

TEST(DetokenizeCommand, CommaListAndJsonArray) {
    auto r = run_k3({"detokenize", "-m", model(), "403,44,355,430,33"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "Hello, World!");
    r = run_k3({"detokenize", "-m", model(), "[1003, 403, 1004]"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "<|open|>Hello<|sep|>");
    r = run_k3({"detokenize", "-m", model(), "--skip-special", "1003, 403, 1004"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "Hello");
}

TEST(DetokenizeCommand, RejectsBadIdsWithOneLine) {
    auto r = run_k3({"detokenize", "-m", model(), "403,1024"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("token id 1024 is outside the vocabulary"), std::string::npos) << r.err;
    r = run_k3({"detokenize", "-m", model(), "403,abc"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("'abc' is not a token id"), std::string::npos) << r.err;
}

TEST(TokenizeCommand, NeedsTextOrFile) {
    auto r = run_k3({"tokenize", "-m", model()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("give the text"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace k3::text
