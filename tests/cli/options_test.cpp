// Option handling shared by every subcommand (src/cli/options.h): each usage error exits 2 with
// a message naming the option and what it must be; llama.cpp's spellings are understood or
// refused by name; --help shows the defaults.
#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <thread>
#include <vector>

#include "support/test_support.h"

namespace k3::cli {
namespace {

using testing::CommandResult;
using testing::fixture;
using testing::run_k3;

const std::string& model() {
    static const std::string path = fixture("tiny-k3/model.gguf");
    return path;
}

void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
    const CommandResult r = run_k3(args);
    std::string command;
    for (const std::string& a : args) command += a + " ";
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << command << "\n" << r.err;
    EXPECT_EQ(r.err.find("1797693"), std::string::npos) << r.err;  // CLI11's range text for "no upper bound"
}

std::vector<std::string> run_with(std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "-m", model(), "-p", "hi", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

TEST(Options, SamplingValuesOutOfRangeAreUsageErrors) {
    expect_usage_error(run_with({"--top-p", "1.5"}), "--top-p: must be in [0, 1], not 1.5");
    expect_usage_error(run_with({"--top-p", "-0.1"}), "--top-p: must be in [0, 1]");
    expect_usage_error(run_with({"--min-p", "2"}), "--min-p: must be in [0, 1]");
    expect_usage_error(run_with({"--top-k", "-1"}), "--top-k: must be at least 0, not -1");
    expect_usage_error(run_with({"--temp", "-0.5"}), "--temp: must be at least 0");
    expect_usage_error(run_with({"--temp", "warm"}), "--temp: 'warm' is not a number");
    expect_usage_error(run_with({"-n", "0"}), "--n-predict: must be -1 (no limit) or at least 1, not 0");
    expect_usage_error(run_with({"-n", "-2"}), "--n-predict: must be -1 (no limit) or at least 1");
    expect_usage_error({"chat", "-m", model(), "--top-p", "7"}, "--top-p: must be in [0, 1]");
}

TEST(Options, ThreadsAboveTheBoundAreUsageErrors) {
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const std::string too_many = std::to_string(4 * hardware + 1);
    expect_usage_error(run_with({"-t", too_many}), "--threads: must be in [0, " + std::to_string(4 * hardware) + "]");
    expect_usage_error({"serve", "-m", model(), "-t", too_many}, "--threads: must be in [0, ");
    expect_usage_error({"bench", "-m", model(), "-t", "-1"}, "--threads: must be in [0, ");
    expect_usage_error({"eval", "-m", model(), "--tokens", "1", "-t", too_many}, "--threads: must be in [0, ");
    expect_usage_error({"mock", "--dry-run", "-t", too_many}, "--threads: must be in [0, ");
}

// tiny-k3's context_length is 4096 (fixtures/README.md §1).
TEST(Options, ContextLargerThanTheModelsIsAUsageError) {
    expect_usage_error(run_with({"-c", "4097"}), "--ctx-size 4097 is larger than the model's context length (4096)");
    expect_usage_error({"serve", "-m", model(), "-c", "5000"}, "--ctx-size 5000 is larger than the model's context length (4096)");
    expect_usage_error({"chat", "-m", model(), "-c", "8192"}, "larger than the model's context length (4096)");
    expect_usage_error(run_with({"-c", "-1"}), "--ctx-size: must be at least 0");
}

TEST(Options, LlamaCppSpellingsAreRefusedByName) {
    expect_usage_error(run_with({"-ngl", "99"}), "-ngl is llama.cpp's GPU offload");
    expect_usage_error({"serve", "-m", model(), "--n-gpu-layers", "99"}, "--n-gpu-layers is llama.cpp's GPU offload");
    expect_usage_error(run_with({"-fa"}), "-fa is llama.cpp's flash-attention switch");
    expect_usage_error({"chat", "-m", model(), "-cnv"}, "-cnv is llama.cpp's conversation mode");
    expect_usage_error({"run", "-hf", "moonshotai/Kimi-K3", "-p", "hi"}, "-hf is llama.cpp's Hugging Face download");
    expect_usage_error(run_with({"-ot", "exps=CPU"}), "-ot is llama.cpp's tensor placement override");
    expect_usage_error({"serve", "-m", model(), "-sys", "be brief"}, "-sys is llama.cpp's system prompt");
    expect_usage_error({"info", model(), "--jinja"}, "--jinja is llama.cpp's chat-template switch");
}

// fixtures/chat/chat_cases.json "system_user_genprompt": -sys is --system, and --jinja is accepted.
TEST(Options, LlamaCppSystemPromptAndJinjaAreUnderstood) {
    CommandResult with_k3_spelling = run_k3({"run", "-m", model(), "--print-prompt", "--system", "Be brief.", "-p", "hi"});
    ASSERT_EQ(with_k3_spelling.exit_code, 0) << with_k3_spelling.err;
    CommandResult with_llama_spelling = run_k3({"run", "-m", model(), "--print-prompt", "-sys", "Be brief.", "--jinja", "-p", "hi"});
    ASSERT_EQ(with_llama_spelling.exit_code, 0) << with_llama_spelling.err;
    EXPECT_EQ(with_llama_spelling.out, with_k3_spelling.out);
    EXPECT_NE(with_k3_spelling.out.find("Be brief."), std::string::npos) << with_k3_spelling.out;
}

TEST(Options, EverySubcommandExitsTwoOnAnUnknownOption) {
    for (const char* command : {"info", "run", "chat", "eval", "bench", "tokenize", "detokenize", "template", "serve",
                                "convert", "quantize", "mock"})
        expect_usage_error({command, "--no-such-option"}, std::string("k3 ") + command + ": error: ");
    expect_usage_error({"template"}, "give either --template or -m");
    expect_usage_error({"tokenize", "-m", model()}, "give the text, or --file");
    expect_usage_error({"mock"}, "an output path is required");
    expect_usage_error({"convert", fixture("hf/tiny-a/checkpoint")}, "-o OUT.gguf is required");
    expect_usage_error({"convert", fixture("hf/tiny-a/checkpoint"), "-o", "x.gguf", "--split-max-size", "12Q"},
                       "--split-max-size: 12Q is not a byte size");
    expect_usage_error({"quantize", model(), "x.gguf", "q8_0", "--tensor-type", "attn"}, "--tensor-type attn: expected REGEX=TYPE");
    expect_usage_error({"mock", "--dry-run", "--type", "q9"}, "--type: unknown type 'q9'");
}

// The defaults are GenerationOptions' and the server's (README "Commands").
TEST(Options, HelpShowsTheDefaults) {
    CommandResult r = run_k3({"run", "--help"});
    ASSERT_EQ(r.exit_code, 0);
    for (const char* shown : {"--n-predict INT=512", "--temp FLOAT=0.8", "--top-p FLOAT=0.95", "--top-k INT=40",
                              "--min-p FLOAT=0.05", "--threads INT=0", "--ctx-size INT=0"})
        EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
    EXPECT_EQ(r.out.find("1797693"), std::string::npos);
    r = run_k3({"serve", "--help"});
    ASSERT_EQ(r.exit_code, 0);
    for (const char* shown : {"--host TEXT=127.0.0.1", "--port", "=8080", "--parallel INT=1"})
        EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
}

}  // namespace
}  // namespace k3::cli
