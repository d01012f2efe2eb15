// `k3 serve` on the tiny-k3 fixture, spoken to over loopback HTTP: greedy answers equal the
// llama.cpp reference and `k3 eval --greedy`, alone and with 8 requests batched together; bad
// input gets OpenAI-style 4xx errors and the server keeps serving; SIGTERM ends it with 0.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

const std::string kModel = fixture("tiny-k3/model.gguf");

struct GreedyCase {
    std::string name;
    std::vector<int32_t> prompt, generated;
};

std::vector<GreedyCase> fixture_cases() {
    const json cases = json::parse(read_text(fixture("tiny-k3/cases.json")));
    std::vector<GreedyCase> out;
    for (const json& c : cases["cases"])
        out.push_back({c["name"], c["prompt"].get<std::vector<int32_t>>(), c["generated"].get<std::vector<int32_t>>()});
    return out;
}

std::vector<int32_t> greedy_tokens(uint16_t port, const std::vector<int32_t>& prompt, size_t n) {
    const json request = {{"prompt", prompt}, {"n_predict", n}, {"temperature", 0}};
    const HttpReply reply = http_request(port, "POST", "/completion", request.dump());
    if (reply.status != 200) throw std::runtime_error("status " + std::to_string(reply.status) + ": " + reply.body);
    return json::parse(reply.body)["tokens"].get<std::vector<int32_t>>();
}

class ServerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = new ServerProcess(kModel, {"--parallel", "4", "--ctx-size", "512", "--max-body", "65536"});
    }
    static void TearDownTestSuite() {
        EXPECT_EQ(server_->stop(), 0) << "SIGTERM must end k3 serve with status 0";
        delete server_;
    }
    static uint16_t port() { return server_->port(); }
    static ServerProcess* server_;

    void expect_error(const HttpReply& reply, int status, const std::string& what) {
        EXPECT_EQ(reply.status, status) << what << ": " << reply.body;
        const json body = json::parse(reply.body, nullptr, false);
        ASSERT_TRUE(body.is_object() && body.contains("error")) << what << ": " << reply.body;
        EXPECT_TRUE(body["error"]["message"].is_string()) << what;
        EXPECT_TRUE(body["error"]["type"].is_string()) << what;
        EXPECT_TRUE(body["error"]["code"].is_string()) << what;
    }
};
ServerProcess* ServerTest::server_ = nullptr;

TEST_F(ServerTest, GreedyCompletionEqualsLlamaCppReference) {
    for (const GreedyCase& c : fixture_cases())
        EXPECT_EQ(greedy_tokens(port(), c.prompt, c.generated.size()), c.generated) << c.name;
}

TEST_F(ServerTest, GreedyCompletionEqualsK3Eval) {
    const GreedyCase c = fixture_cases()[1];
    std::string ids;
    for (int32_t id : c.prompt) {
        if (!ids.empty()) ids += ',';
        ids += std::to_string(id);
    }
    const CommandResult eval = run_k3({"eval", "-m", kModel, "--tokens", ids, "--greedy", "32", "-t", "2"});
    ASSERT_EQ(eval.exit_code, 0) << eval.err;
    EXPECT_EQ(greedy_tokens(port(), c.prompt, 32), json::parse(eval.out).get<std::vector<int32_t>>());
}

TEST_F(ServerTest, EightConcurrentRequestsGetTheirOwnUnchangedAnswers) {
    const std::vector<GreedyCase> cases = fixture_cases();
    std::vector<std::future<std::vector<int32_t>>> answers;
    for (int i = 0; i < 8; ++i) {
        const GreedyCase& c = cases[size_t(i) % cases.size()];
        answers.push_back(std::async(std::launch::async, [&c] { return greedy_tokens(port(), c.prompt, 32); }));
    }
    for (int i = 0; i < 8; ++i)
        EXPECT_EQ(answers[size_t(i)].get(), cases[size_t(i) % cases.size()].generated) << "request " << i;
}

TEST_F(ServerTest, StreamedCompletionCarriesTheSameTokens) {
    const GreedyCase c = fixture_cases()[0];
    const json request = {{"prompt", c.prompt}, {"n_predict", 32}, {"temperature", 0}, {"stream", true}};
    const HttpReply reply = http_request(port(), "POST", "/completion", request.dump());
    ASSERT_EQ(reply.status, 200);
    EXPECT_EQ(reply.header("content-type"), "text/event-stream");
    std::vector<int32_t> tokens;
    std::vector<std::string> events = sse_events(reply.body);
    ASSERT_FALSE(events.empty());
    for (const std::string& event : events) {
        const json parsed = json::parse(event);
        for (int32_t id : parsed["tokens"]) tokens.push_back(id);
    }
    EXPECT_EQ(tokens, c.generated);
    const json last = json::parse(events.back());
    EXPECT_EQ(last["stop"], true);
    EXPECT_EQ(last["stop_type"], "limit");
}

TEST_F(ServerTest, ChatCompletionHasOpenAIShape) {
    const json request = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 5},
                          {"temperature", 0}};
    const HttpReply reply = http_request(port(), "POST", "/v1/chat/completions", request.dump());
    ASSERT_EQ(reply.status, 200) << reply.body;
    const json body = json::parse(reply.body);
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
    EXPECT_TRUE(body["choices"][0]["message"]["content"].is_string());
    const int completion = body["usage"]["completion_tokens"];
    EXPECT_LE(completion, 5);
    EXPECT_EQ(body["choices"][0]["finish_reason"], completion == 5 ? "length" : "stop");
    EXPECT_EQ(int(body["usage"]["total_tokens"]), int(body["usage"]["prompt_tokens"]) + completion);
}

TEST_F(ServerTest, ChatStreamEndsWithFinishReasonUsageAndDone) {
    const json request = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}, {"stream", true},
                          {"stream_options", {{"include_usage", true}}}, {"chat_template_kwargs", {{"thinking", false}}}};
    const HttpReply reply = http_request(port(), "POST", "/v1/chat/completions", request.dump());
    ASSERT_EQ(reply.status, 200) << reply.body;
    const std::vector<std::string> events = sse_events(reply.body);
    ASSERT_GE(events.size(), 4u);
    EXPECT_EQ(events.back(), "[DONE]");
    EXPECT_EQ(json::parse(events.front())["choices"][0]["delta"]["role"], "assistant");
    const json usage = json::parse(events[events.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_LE(int(usage["usage"]["completion_tokens"]), 4);
    EXPECT_FALSE(json::parse(events[events.size() - 3])["choices"][0]["finish_reason"].is_null());
}

TEST_F(ServerTest, TokenizeAndDetokenizeMatchTheTokenizerFixture) {
    const json cases = json::parse(read_text(fixture("tokenizer/tokenizer_cases.json")));
    int checked = 0;
    for (const json& c : cases["cases"]) {
        if (c["text"].get<std::string>().empty() || checked++ == 10) continue;
        const HttpReply tokens = http_request(port(), "POST", "/tokenize",
                                              json{{"content", c["text"]}, {"parse_special", false}}.dump());
        ASSERT_EQ(tokens.status, 200);
        EXPECT_EQ(json::parse(tokens.body)["tokens"], c["ids"]) << c["text"];
        const HttpReply text = http_request(port(), "POST", "/detokenize", json{{"tokens", c["ids"]}}.dump());
        ASSERT_EQ(text.status, 200);
        EXPECT_EQ(json::parse(text.body)["content"], c["detok"]);
    }
}

TEST_F(ServerTest, HealthModelsAndMetrics) {
    EXPECT_EQ(json::parse(http_request(port(), "GET", "/health").body)["status"], "ok");
    const json models = json::parse(http_request(port(), "GET", "/v1/models").body);
    EXPECT_EQ(models["data"][0]["id"], "model.gguf");
    EXPECT_EQ(models["data"][0]["meta"]["n_ctx"], 512);
    const HttpReply metrics = http_request(port(), "GET", "/metrics");
    ASSERT_EQ(metrics.status, 200);
    for (const char* name : {"k3_http_responses_total{", "k3_prompt_tokens_total ", "k3_generated_tokens_total ",
                             "k3_queue_depth ", "k3_tokens_per_second "})
        EXPECT_NE(metrics.body.find(name), std::string::npos) << name;
}

TEST_F(ServerTest, BadRequestsGetOpenAIErrorsAndTheServerKeepsServing) {
    const std::string chat = "/v1/chat/completions";
    expect_error(http_request(port(), "POST", chat, "{not json"), 400, "malformed JSON");
    expect_error(http_request(port(), "POST", chat, "[1,2]"), 400, "not an object");
    expect_error(http_request(port(), "POST", chat, R"({"messages": "hi"})"), 400, "messages of the wrong type");
    expect_error(http_request(port(), "POST", chat, R"({"messages": []})"), 400, "empty messages");
    expect_error(http_request(port(), "POST", chat, R"({"messages": [{"role": "wizard", "content": "x"}]})"), 400,
                 "unknown role");
    expect_error(http_request(port(), "POST", chat,
                              R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})"),
                 400, "temperature of the wrong type");
    expect_error(http_request(port(), "POST", chat,
                              R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 100000})"),
                 400, "max_tokens beyond the context");
    // A tool call without a function name: the template raises.
    expect_error(http_request(port(), "POST", chat,
                              R"({"messages": [{"role": "user", "content": "x"},
                                  {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "function": {}}]}]})"),
                 400, "template error");
    expect_error(http_request(port(), "POST", "/completion", json{{"prompt", std::vector<int>(600, 5)}}.dump()), 400,
                 "prompt longer than the context");
    expect_error(http_request(port(), "POST", "/completion", R"({"prompt": [5, 99999]})"), 400, "id out of range");
    expect_error(http_request(port(), "POST", "/v1/completions", std::string(100000, ' ')), 413, "oversized body");
    expect_error(http_request(port(), "GET", chat), 405, "wrong method");
    expect_error(http_request(port(), "GET", "/v2/nothing"), 404, "unknown path");
    EXPECT_EQ(http_request(port(), "GET", "/health").status, 200);
    EXPECT_EQ(greedy_tokens(port(), fixture_cases()[0].prompt, 3).size(), 3u);
}

TEST(ServerAuth, ApiKeyIsRequiredExceptForHealth) {
    ServerProcess server(kModel, {"--api-key", "sesame", "--ctx-size", "256"});
    const std::string body = R"({"prompt": [1, 2, 3], "n_predict": 2})";
    EXPECT_EQ(http_request(server.port(), "POST", "/completion", body).status, 401);
    EXPECT_EQ(http_request(server.port(), "POST", "/completion", body, {"Authorization: Bearer wrong"}).status, 401);
    EXPECT_EQ(http_request(server.port(), "POST", "/completion", body, {"Authorization: Bearer sesame"}).status, 200);
    EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
    EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace k3::testing
