// `k3 chat` with piped stdin: answers line by line or a JSON conversation, then exits; /save
// and /load keep the conversation as JSON messages; a later turn continued from the cached
// session state answers exactly as a fresh session given the whole conversation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "support/test_support.h"

namespace k3::cli {
namespace {

using nlohmann::json;
using testing::CommandResult;
using testing::run_k3;

std::vector<std::string> chat_args() {
    return {"chat", "-m", testing::fixture("tiny-k3/model.gguf"), "--temp", "0", "-n", "8", "--no-thinking", "-t", "2"};
}

TEST(ChatCommand, AnswersPipedLinesSavesTheConversationAndExits) {
    testing::ScratchDir scratch;
    const std::string saved = scratch.file("conversation.json");
    const CommandResult r = run_k3(chat_args(), "Hello there\n\nWhat is 2+2?\n/save " + saved + "\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("t/s"), std::string::npos) << r.err;  // tokens/s after each answer

    const json messages = json::parse(testing::read_text(saved));
    ASSERT_EQ(messages.size(), 4u) << messages.dump();
    EXPECT_EQ(messages[0], json({{"role", "user"}, {"content", "Hello there"}}));
    EXPECT_EQ(messages[1]["role"], "assistant");
    EXPECT_EQ(messages[2], json({{"role", "user"}, {"content", "What is 2+2?"}}));
    EXPECT_EQ(messages[3]["role"], "assistant");
    // Both answers were shown on stdout, in order.
    const std::string first = messages[1]["content"], second = messages[3]["content"];
    EXPECT_NE(r.out.find(first), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(second, r.out.find(first) + first.size()), std::string::npos) << r.out;

    // The second turn reused the state left by the first (stderr: "(+N cached)").
    EXPECT_NE(r.err.find("cached"), std::string::npos) << r.err;

    // The same conversation up to the second question, piped whole as JSON to a fresh process,
    // gets the same greedy answer as the session that continued from its cached state.
    json so_far = messages;
    so_far.erase(3);
    const CommandResult fresh = run_k3(chat_args(), so_far.dump());
    ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
    EXPECT_EQ(fresh.out, second + "\n");
}

TEST(ChatCommand, LoadContinuesASavedConversationAndResetForgetsIt) {
    testing::ScratchDir scratch;
    const std::string before = scratch.file("before.json"), after = scratch.file("after.json");
    const json conversation = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                           {{"role", "user"}, {"content", "Name a colour."}},
                                           {{"role", "assistant"}, {"content", "Blue."}}});
    const std::string text = conversation.dump();
    testing::write_bytes(before, text.data(), text.size());
    const CommandResult r = run_k3(chat_args(), "/load " + before + "\nAnother one?\n/save " + after +
                                                    "\n/reset\n/save " + before + "\n/quit\nnot answered\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json continued = json::parse(testing::read_text(after));
    ASSERT_EQ(continued.size(), 5u);
    EXPECT_EQ(json(continued.begin(), continued.begin() + 3), conversation);
    EXPECT_EQ(continued[3], json({{"role", "user"}, {"content", "Another one?"}}));
    EXPECT_EQ(json::parse(testing::read_text(before)), json::array());
    const size_t first_stats = r.err.find("prompt:");
    ASSERT_NE(first_stats, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("prompt:", first_stats + 1), std::string::npos) << "answered after /quit: " << r.err;
}

// The prompt cache keeps a checkpoint where the messages before the last one end (#13): a
// conversation whose last message is edited resumes there, not at the periodic checkpoint before
// it (256), and answers as a fresh process given the edited conversation.
TEST(ChatCommand, AnEditedLastMessageResumesAtTheMessageBoundary) {
    testing::ScratchDir scratch;
    const std::string history = scratch.file("history.json"), edited = scratch.file("edited.json"),
                      cold = scratch.file("cold.json"), rendered = scratch.file("rendered.txt");
    const json conversation = json::array(
        {{{"role", "system"}, {"content", "You answer questions about the weather in a long and careful way, with many "
                                          "words, so that this system prompt runs to many tokens of text."}},
         {{"role", "user"}, {"content", "What is the weather like on a hill in the north of the country in spring?"}},
         {{"role", "assistant"}, {"content", "Cold and windy."}}});
    const std::string text = conversation.dump();
    testing::write_bytes(history, text.data(), text.size());
    // The boundary, counted apart from the chat: the history rendered alone, then tokenized.
    const std::string model = testing::fixture("tiny-k3/model.gguf");
    const CommandResult render = run_k3({"template", "-m", model, "--messages", history});
    ASSERT_EQ(render.exit_code, 0) << render.err;
    testing::write_bytes(rendered, render.out.data(), render.out.size());
    const CommandResult ids = run_k3({"tokenize", "-m", model, "--parse-special", "-f", rendered});
    ASSERT_EQ(ids.exit_code, 0) << ids.err;
    const int64_t boundary = int64_t(json::parse(ids.out).size());
    ASSERT_GT(boundary / 16 * 16, 256) << "the boundary must lie past the first periodic checkpoint";

    // Thinking on, as the history was rendered (chat_args says --no-thinking).
    const std::vector<std::string> args = {"chat", "-m", model, "--temp", "0", "-n", "8", "-t", "2"};
    const CommandResult r = run_k3(args, "/load " + history + "\nIs it raining?\n/load " + history +
                                             "\nIs it snowing?\n/save " + edited + "\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const size_t second = r.err.find("prompt:", r.err.find("prompt:") + 1);
    ASSERT_NE(second, std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(+" + std::to_string(boundary / 16 * 16) + " cached)", second), std::string::npos)
        << "expected to resume at " << boundary << " rounded down to the KDA chunk: " << r.err;

    const CommandResult fresh = run_k3(args, "/load " + history + "\nIs it snowing?\n/save " + cold + "\n");
    ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
    EXPECT_EQ(fresh.err.find("cached"), std::string::npos) << fresh.err;
    EXPECT_EQ(json::parse(testing::read_text(edited)), json::parse(testing::read_text(cold)));
}

TEST(ChatCommand, PipedErrorsEndWithStatusOne) {
    CommandResult r = run_k3(chat_args(), "/bogus\n");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("unknown command"), std::string::npos) << r.err;

    r = run_k3(chat_args(), "[{\"content\": \"no role\"}");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("JSON"), std::string::npos) << r.err;
}

TEST(ChatCommand, HelpDescribesPipedInput) {
    const CommandResult r = run_k3({"chat", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("JSON array of messages"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/save"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace k3::cli
