// Notices instead of silence: an answer cut inside the reasoning says why stdout is empty and
// how to fix it; a full chat context says so and offers /reset (which then works); /save and
// /load without a file name their usage.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace k3::cli {
namespace {

using nlohmann::json;
using testing::CommandResult;
using testing::run_k3;

const std::string& model() {
    static const std::string path = testing::fixture("tiny-k3/model.gguf");
    return path;
}

// K3's template opens a think section by default (k3-architecture.md §11.1), and three greedy
// tokens of the random tiny model do not close it.
TEST(Notices, AnswerCutInsideTheReasoningSaysHowToFixIt) {
    const std::vector<std::string> args = {"run", "-m", model(), "-p", "hi", "--temp", "0", "-n", "3", "-q", "-t", "2"};
    std::vector<std::string> json_args = args;
    json_args.push_back("--json");
    const CommandResult collected = run_k3(json_args);
    ASSERT_EQ(collected.exit_code, 0) << collected.err;
    const json out = json::parse(collected.out);
    ASSERT_EQ(out["content"], "");
    ASSERT_NE(out["reasoning_content"], "");

    const CommandResult r = run_k3(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("generation stopped inside the reasoning after 3 tokens (-n 3), so there is no answer"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--no-thinking"), std::string::npos) << r.err;

    // Without reasoning there is an answer, and no notice.
    std::vector<std::string> no_thinking = args;
    no_thinking.push_back("--no-thinking");
    const CommandResult answered = run_k3(no_thinking);
    ASSERT_EQ(answered.exit_code, 0) << answered.err;
    EXPECT_EQ(answered.err.find("note:"), std::string::npos) << answered.err;
}

std::vector<std::string> small_context_chat() {
    return {"chat", "-m", model(), "-c", "200", "--temp", "0", "--no-thinking", "-q", "-t", "2"};
}

TEST(Notices, FullChatContextOffersResetWhichWorks) {
    CommandResult r = run_k3(small_context_chat(), "hello\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("note: the context (200 tokens) is full and the answer was cut; /reset starts a new conversation"),
              std::string::npos)
        << r.err;

    r = run_k3(small_context_chat(), "hello\nand then?\n");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("and the context holds 200: /reset starts a new conversation (or restart with a larger -c, up to 4096)"),
              std::string::npos)
        << r.err;

    r = run_k3(small_context_chat(), "hello\n/reset\nand then?\n");
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(Notices, SaveAndLoadWithoutAFileNameTheirUsage) {
    CommandResult r = run_k3({"chat", "-m", model(), "-q"}, "/save\n");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("usage: /save FILE"), std::string::npos) << r.err;
    r = run_k3({"chat", "-m", model(), "-q"}, "/load \n");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("usage: /load FILE"), std::string::npos) << r.err;
}

// K3_ISA naming no level: the run goes on at the best level and says so once, with the same
// logits as without it (the levels compute identical results).
TEST(Notices, UnknownIsaLevelRunsTheBestLevelAndSaysSo) {
    const testing::ScratchDir dir;
    const auto eval = [&](const std::string& out) {
        return run_k3({"eval", "-m", model(), "--tokens", "1,2,3", "--logits-out", dir.file(out), "-t", "2"});
    };
    // The plain run at the best level too, whatever K3_ISA the suite itself runs under.
    const char* outer = std::getenv("K3_ISA");
    const std::optional<std::string> outer_isa = outer ? std::optional<std::string>(outer) : std::nullopt;
    ::unsetenv("K3_ISA");
    const CommandResult plain = eval("plain.f32");
    ::setenv("K3_ISA", "avx9", 1);
    const CommandResult r = eval("capped.f32");
    if (outer_isa) ::setenv("K3_ISA", outer_isa->c_str(), 1);
    else ::unsetenv("K3_ISA");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.err.find("K3_ISA"), std::string::npos) << plain.err;
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string notice = "k3: K3_ISA=avx9 is not a level (scalar, avx2, avx512, avx512vbmi, amx); running ";
    const size_t at = r.err.find(notice);
    ASSERT_NE(at, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(notice, at + 1), std::string::npos) << "said once: " << r.err;
    EXPECT_EQ(testing::read_bytes(dir.file("capped.f32")), testing::read_bytes(dir.file("plain.f32")));
}

}  // namespace
}  // namespace k3::cli
