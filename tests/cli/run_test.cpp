// `k3 run`: greedy raw completions equal llama.cpp's (tiny-k3/cases.json), chat prompts equal
// the Jinja2 renderings of chat/chat_cases.json, stop strings, prompt sources, option errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace k3::cli {
namespace {

using nlohmann::json;
using testing::CommandResult;
using testing::fixture;
using testing::run_k3;

const std::string& model() {
    static const std::string path = fixture("tiny-k3/model.gguf");
    return path;
}

std::string join_ids(const json& ids) {
    std::string text;
    for (const json& id : ids) {
        if (!text.empty()) text += ',';
        text += std::to_string(id.get<int>());
    }
    return text;
}

json chat_case(const std::string& name) {
    const json cases = json::parse(testing::read_text(fixture("chat/chat_cases.json")))["cases"];
    for (const json& c : cases)
        if (c["name"] == name) return c;
    throw std::runtime_error("no chat case " + name);
}

// fixtures/README.md §5: from `prompt`, greedy decoding gives `generated` exactly. None of the
// references contains an end-of-generation id, so all 32 tokens come out.
TEST(RunCommand, GreedyRawContinuationEqualsFixtureForEveryCase) {
    const json cases = json::parse(testing::read_text(fixture("tiny-k3/cases.json")))["cases"];
    for (const json& c : cases) {
        const CommandResult r = run_k3({"run", "-m", model(), "--tokens", join_ids(c["prompt"]), "--temp", "0",
                                        "-n", "32", "--json", "-q", "-t", "2"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const json out = json::parse(r.out);
        EXPECT_EQ(out["prompt_tokens"], c["prompt"]) << c["name"];
        EXPECT_EQ(out["tokens"], c["generated"]) << c["name"];
        EXPECT_EQ(out["finish_reason"], "length");
    }
}

// --prompt-cache: the second run resumes from the saved prompt state and gives the reference
// tokens; a damaged file is ignored with a warning and the answer is unchanged.
TEST(RunCommand, PromptCacheFileIsReusedAndADamagedOneIgnored) {
    const json c = json::parse(testing::read_text(fixture("tiny-k3/cases.json")))["cases"][2];
    testing::ScratchDir dir;
    const std::string cache = dir.file("prompt.k3state");
    const std::vector<std::string> args = {"run", "-m", model(), "--tokens", join_ids(c["prompt"]), "--temp", "0",
                                           "-n", "32", "--json", "-q", "-t", "2", "--prompt-cache", cache};
    const size_t n_prompt = c["prompt"].size();
    for (int run = 0; run < 2; ++run) {
        const CommandResult r = run_k3(args);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const json out = json::parse(r.out);
        EXPECT_EQ(out["tokens"], c["generated"]) << "run " << run;
        // The second run feeds only what follows the saved checkpoint (the last 16-token chunk boundary).
        EXPECT_EQ(out["timings"]["prompt_tokens"], run == 0 ? n_prompt : n_prompt - (n_prompt - 1) / 16 * 16);
    }
    testing::write_bytes(cache, "damaged", 7);
    const CommandResult r = run_k3(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: --prompt-cache: ignoring"), std::string::npos) << r.err;
    EXPECT_EQ(json::parse(r.out)["tokens"], c["generated"]);
}

// The streamed text is the same as the collected one, and --stop cuts it before the first
// occurrence of the stop string, which is never shown.
TEST(RunCommand, StreamsTextAndCutsAtStopString) {
    const json c = json::parse(testing::read_text(fixture("tiny-k3/cases.json")))["cases"][2];
    const std::vector<std::string> base = {"run", "-m", model(), "--tokens", join_ids(c["prompt"]),
                                           "--temp", "0", "-n", "32", "-q", "-t", "2"};
    std::vector<std::string> args = base;
    args.push_back("--json");
    const CommandResult collected = run_k3(args);
    ASSERT_EQ(collected.exit_code, 0) << collected.err;
    const std::string text = json::parse(collected.out)["text"];
    ASSERT_GE(text.size(), 12u) << text;

    const CommandResult streamed = run_k3(base);
    ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
    EXPECT_EQ(streamed.out, text + "\n");

    // Two ASCII characters from the second half: a stop string is whole characters.
    size_t at = text.size() / 2;
    while (at + 2 < text.size() && (text[at] & 0x80 || text[at + 1] & 0x80)) ++at;
    ASSERT_LT(at + 2, text.size()) << text;
    const std::string stop = text.substr(at, 2);
    args = base;
    args.insert(args.end(), {"--stop", stop, "--stop", "never-in-random-text", "--json"});
    const CommandResult stopped = run_k3(args);
    ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
    const json out = json::parse(stopped.out);
    EXPECT_EQ(out["text"], text.substr(0, text.find(stop)));
    EXPECT_EQ(out["finish_reason"], "stop");
    EXPECT_LT(out["tokens"].size(), 32u);
}

// The `short` reference continuation holds id 1015, <|reserved_token_7|> (fixtures/README.md
// §1): shown only with --special.
TEST(RunCommand, ControlTokensShownOnlyWithSpecial) {
    const json c = json::parse(testing::read_text(fixture("tiny-k3/cases.json")))["cases"][0];
    const std::vector<std::string> args = {"run", "-m", model(), "--tokens", join_ids(c["prompt"]), "--temp", "0",
                                           "-n", "32", "-q"};
    ASSERT_NE(std::find(c["generated"].begin(), c["generated"].end(), 1015), c["generated"].end());
    const CommandResult plain = run_k3(args);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out.find("<|reserved_token_"), std::string::npos) << plain.out;
    std::vector<std::string> special_args = args;
    special_args.push_back("--special");
    const CommandResult special = run_k3(special_args);
    ASSERT_EQ(special.exit_code, 0) << special.err;
    EXPECT_NE(special.out.find("<|reserved_token_7|>"), std::string::npos) << special.out;
}

// tokenizer/tokenizer_cases.json: "Hello, World!" is [403,44,355,430,33].
TEST(RunCommand, RawPromptTextFromOptionFileOrStdin) {
    const std::vector<int> ids = {403, 44, 355, 430, 33};
    CommandResult r = run_k3({"run", "-m", model(), "--raw", "-p", "Hello, World!", "-n", "1", "--temp", "0", "--json", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["prompt_tokens"], ids);
    EXPECT_EQ(json::parse(r.out)["tokens"].size(), 1u);

    testing::ScratchDir scratch;
    const std::string path = scratch.file("prompt.txt");
    testing::write_bytes(path, "Hello, World!", 13);
    r = run_k3({"run", "-m", model(), "--raw", "--file", path, "-n", "1", "--temp", "0", "--json", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["prompt_tokens"], ids);

    r = run_k3({"run", "-m", model(), "--raw", "-n", "1", "--temp", "0", "--json", "-q"}, "Hello, World!");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["prompt_tokens"], ids);
}

TEST(RunCommand, ChatPromptWithoutThinkingEqualsTemplateFixture) {
    const json c = chat_case("user_only_no_thinking");
    const CommandResult r = run_k3({"run", "-m", model(), "--print-prompt", "--no-thinking", "-p",
                                    c["messages"][0]["content"].get<std::string>()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>());
}

TEST(RunCommand, ChatPromptWithSystemMessageEqualsTemplateFixture) {
    const json c = chat_case("system_user_genprompt");
    const CommandResult r = run_k3({"run", "-m", model(), "--print-prompt", "--system",
                                    c["messages"][0]["content"].get<std::string>(), "-p",
                                    c["messages"][1]["content"].get<std::string>()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>());
}

TEST(RunCommand, ChatTemplateKwargsReachTheTemplate) {
    const json c = chat_case("thinking_effort_low");
    const CommandResult r = run_k3({"run", "-m", model(), "--print-prompt", "--chat-template-kwargs",
                                    c["kwargs"].dump(), "-p", c["messages"][0]["content"].get<std::string>()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>());
}

// The generated ids of a chat answer are the greedy continuation of the rendered prompt's ids.
TEST(RunCommand, ChatModeGeneratesFromTheRenderedPrompt) {
    const json c = chat_case("user_only_no_thinking");
    const std::string question = c["messages"][0]["content"];
    const CommandResult chat = run_k3({"run", "-m", model(), "--no-thinking", "-p", question, "--temp", "0", "-n",
                                       "6", "--json", "-q"});
    ASSERT_EQ(chat.exit_code, 0) << chat.err;
    const json chat_out = json::parse(chat.out);
    const CommandResult raw = run_k3({"run", "-m", model(), "--raw", "-p", c["expected"].get<std::string>(),
                                      "--temp", "0", "-n", "6", "--json", "-q"});
    ASSERT_EQ(raw.exit_code, 0) << raw.err;
    const json raw_out = json::parse(raw.out);
    EXPECT_EQ(chat_out["prompt_tokens"], raw_out["prompt_tokens"]);
    EXPECT_EQ(chat_out["tokens"], raw_out["tokens"]);
    EXPECT_TRUE(chat_out.contains("content"));
}

TEST(RunCommand, HelpListsTheOptions) {
    const CommandResult r = run_k3({"run", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    for (const char* option : {"--n-predict", "--temp", "--top-p", "--top-k", "--min-p", "--seed", "--threads",
                               "--stop", "--raw", "--no-reasoning", "--no-thinking", "--chat-template-kwargs"})
        EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

TEST(RunCommand, BadOptionsGiveOneClearError) {
    CommandResult r = run_k3({"run", "-p", "hi"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;

    r = run_k3({"run", "-m", model(), "-p", "hi", "--temp", "warm"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--temp"), std::string::npos) << r.err;

    r = run_k3({"run", "-m", model(), "--tokens", "5,x"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("'x' is not a token id"), std::string::npos) << r.err;

    r = run_k3({"run", "-m", model(), "--tokens", "5,1024"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("'1024'"), std::string::npos) << r.err;

    r = run_k3({"run", "-m", model(), "-p", "hi", "--chat-template-kwargs", "{oops"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--chat-template-kwargs"), std::string::npos) << r.err;

    r = run_k3({"run", "-m", model()});  // stdin empty
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no prompt"), std::string::npos) << r.err;

    r = run_k3({"run", "-m", "/nonexistent/model.gguf", "-p", "hi"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace k3::cli
