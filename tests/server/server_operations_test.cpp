// `k3 serve`'s operations on the tiny-k3 fixture, over loopback HTTP: /props, CORS, the request
// log, --special, --chat-template-file, --reasoning-format, `n` > 1 and its bound, the chat page.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/kda.h"
#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

const std::string kModel = fixture("tiny-k3/model.gguf");
constexpr int32_t kReservedToken0 = 1008;  // <|reserved_token_0|> (fixtures/README.md)

json post_json(uint16_t port, const std::string& path, const json& body, const std::vector<std::string>& headers = {}) {
    const HttpReply reply = http_request(port, "POST", path, body.dump(), headers);
    if (reply.status != 200) throw std::runtime_error(path + ": status " + std::to_string(reply.status) + ": " + reply.body);
    return json::parse(reply.body);
}

json chat_body(const std::string& text, int max_tokens) {
    return {{"messages", json::array({{{"role", "user"}, {"content", text}}})},
            {"max_tokens", max_tokens},
            {"temperature", 0}};
}

double metric(uint16_t port, const std::string& name) {
    std::istringstream lines(http_request(port, "GET", "/metrics").body);
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
    throw std::runtime_error("no metric " + name);
}

TEST(ServerProps, ReportsTheServersSettingsAndTheModelsTemplate) {
    ServerProcess server(kModel, {"--parallel", "2", "--ctx-size", "384", "--temp", "0.25", "--top-k", "7",
                                  "--seed", "99", "-n", "33"});
    const HttpReply reply = http_request(server.port(), "GET", "/props");
    ASSERT_EQ(reply.status, 200) << reply.body;
    const json props = json::parse(reply.body);
    EXPECT_EQ(props["total_slots"], 2);
    EXPECT_EQ(props["n_ctx"], 384);
    EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 384);
    const json& params = props["default_generation_settings"]["params"];
    EXPECT_DOUBLE_EQ(params["temperature"].get<double>(), 0.25);
    EXPECT_EQ(params["top_k"], 7);
    EXPECT_EQ(params["seed"], 99);
    EXPECT_EQ(params["n_predict"], 33);
    EXPECT_EQ(props["model_path"], kModel);
    EXPECT_EQ(props["modalities"], json({{"vision", false}, {"audio", false}}));
    EXPECT_TRUE(props["build_info"].get<std::string>().starts_with("k3 "));
    // The template as the GGUF holds it; the Kimi-K3 template renders tools, tool calls, a
    // system message and a thinking switch.
    const auto file = gguf::GgufFile::open(kModel);
    EXPECT_EQ(props["chat_template"], *file->get_string("tokenizer.chat_template"));
    EXPECT_EQ(props["chat_template_caps"],
              json({{"tools", true}, {"tool_calls", true}, {"system_role", true}, {"reasoning", true}}));
}

TEST(ServerCors, PreflightAndEveryAnswerCarryTheAllowedOrigin) {
    ServerProcess server(kModel, {"--ctx-size", "256", "--api-key", "k", "--cors", "http://a.test,http://b.test"});
    const std::string origin = "Origin: http://b.test";
    const HttpReply preflight =
        http_request(server.port(), "OPTIONS", "/v1/chat/completions", {},
                     {origin, "Access-Control-Request-Method: POST",
                      "Access-Control-Request-Headers: authorization, content-type, x-api-key"});
    EXPECT_EQ(preflight.status, 204);
    EXPECT_EQ(preflight.header("access-control-allow-origin"), "http://b.test");
    EXPECT_NE(preflight.header("access-control-allow-methods").find("post"), std::string::npos);  // the harness lower-cases heads
    EXPECT_EQ(preflight.header("access-control-allow-headers"), "authorization, content-type, x-api-key");
    // Errors (no key, no such endpoint) and a stream carry it too.
    const HttpReply denied = http_request(server.port(), "POST", "/v1/chat/completions", "{}", {origin});
    EXPECT_EQ(denied.status, 401);
    EXPECT_EQ(denied.header("access-control-allow-origin"), "http://b.test");
    const HttpReply missing = http_request(server.port(), "GET", "/nowhere", {}, {origin, "Authorization: Bearer k"});
    EXPECT_EQ(missing.status, 404);
    EXPECT_EQ(missing.header("access-control-allow-origin"), "http://b.test");
    json streamed = chat_body("hello", 2);
    streamed["stream"] = true;
    const HttpReply stream =
        http_request(server.port(), "POST", "/v1/chat/completions", streamed.dump(), {origin, "Authorization: Bearer k"});
    EXPECT_EQ(stream.status, 200);
    EXPECT_EQ(stream.header("access-control-allow-origin"), "http://b.test");
    EXPECT_EQ(sse_events(stream.body).back(), "[DONE]");
    // An origin not listed gets nothing.
    const HttpReply other = http_request(server.port(), "GET", "/health", {}, {"Origin: http://evil.test"});
    EXPECT_EQ(other.header("access-control-allow-origin"), "");
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerCors, WithoutTheOptionNoCorsHeadersAndNoPreflight) {
    ServerProcess server(kModel, {"--ctx-size", "256"});
    const HttpReply preflight = http_request(server.port(), "OPTIONS", "/v1/chat/completions", {},
                                             {"Origin: http://a.test", "Access-Control-Request-Method: POST"});
    EXPECT_EQ(preflight.status, 405);
    EXPECT_EQ(preflight.header("access-control-allow-origin"), "");
    EXPECT_EQ(http_request(server.port(), "GET", "/health", {}, {"Origin: http://a.test"})
                  .header("access-control-allow-origin"),
              "");
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerCors, AStarAllowsAnyOrigin) {
    ServerProcess server(kModel, {"--ctx-size", "256", "--cors", "*"});
    EXPECT_EQ(http_request(server.port(), "GET", "/health", {}, {"Origin: http://x.test"})
                  .header("access-control-allow-origin"),
              "*");
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerCors, AnOriginThatIsNotOneIsAStartupError) {
    const CommandResult result = run_k3({"serve", "-m", kModel, "--port", "0", "--cors", "a.test/path"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("'a.test/path' is not an origin"), std::string::npos) << result.err;
}

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST(ServerRequestLog, OneLinePerRequestWithTokensAndNeitherPromptNorKey) {
    ScratchDir dir;
    const std::string log = dir.file("stderr");
    const std::string secret_word = "zanzibarquokka";
    json usage;
    {
        ServerProcess server(kModel, {"--ctx-size", "256", "--api-key", "topsecretkey"}, log);
        const std::string key = "Authorization: Bearer topsecretkey";
        usage = post_json(server.port(), "/v1/chat/completions", chat_body(secret_word, 3), {key})["usage"];
        EXPECT_EQ(http_request(server.port(), "GET", "/v1/models?key=topsecretkey").status, 401);
        EXPECT_EQ(server.stop(), 0);
    }
    const std::string text = read_text(log);
    EXPECT_EQ(text.find(secret_word), std::string::npos) << text;
    EXPECT_EQ(text.find("topsecretkey"), std::string::npos) << text;
    std::vector<std::string> requests;
    for (const std::string& line : lines_of(log))
        if (line.starts_with("k3 serve: POST") || line.starts_with("k3 serve: GET")) requests.push_back(line);
    ASSERT_EQ(requests.size(), 2u) << text;
    const std::string expected = "k3 serve: POST /v1/chat/completions 200 prompt=" +
                                 std::to_string(usage["prompt_tokens"].get<int>()) +
                                 " completion=" + std::to_string(usage["completion_tokens"].get<int>()) + " ";
    EXPECT_TRUE(requests[0].starts_with(expected)) << requests[0] << " vs " << expected;
    EXPECT_TRUE(requests[0].ends_with("ms"));
    EXPECT_TRUE(requests[1].starts_with("k3 serve: GET /v1/models 401 ")) << requests[1];
}

TEST(ServerRequestLog, JsonLinesAndOff) {
    ScratchDir dir;
    json usage;
    {
        ServerProcess server(kModel, {"--ctx-size", "256", "--log-format", "json"}, dir.file("json"));
        usage = post_json(server.port(), "/v1/completions", {{"prompt", "abc"}, {"max_tokens", 2}})["usage"];
        EXPECT_EQ(server.stop(), 0);
    }
    bool found = false;
    for (const std::string& line : lines_of(dir.file("json"))) {
        const json entry = json::parse(line, nullptr, false);
        if (!entry.is_object()) continue;
        found = true;
        EXPECT_EQ(entry["method"], "POST");
        EXPECT_EQ(entry["path"], "/v1/completions");
        EXPECT_EQ(entry["status"], 200);
        EXPECT_EQ(entry["prompt_tokens"], usage["prompt_tokens"]);
        EXPECT_EQ(entry["completion_tokens"], usage["completion_tokens"]);
        EXPECT_TRUE(entry["ms"].is_number());
    }
    EXPECT_TRUE(found);
    {
        ServerProcess server(kModel, {"--ctx-size", "256", "--log-format", "off"}, dir.file("off"));
        EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
        EXPECT_EQ(server.stop(), 0);
    }
    EXPECT_EQ(read_text(dir.file("off")).find("GET /health"), std::string::npos);
}

// A logit bias that makes <|reserved_token_0|> every greedy token.
json reserved_token_request() {
    return {{"prompt", "abc"}, {"max_tokens", 3}, {"temperature", 0}, {"logit_bias", {{std::to_string(kReservedToken0), 100}}}};
}

TEST(ServerSpecialTokens, ControlTokensAreLeftOutUnlessSpecial) {
    {
        ServerProcess server(kModel, {"--ctx-size", "256"});
        const json plain = post_json(server.port(), "/v1/completions", reserved_token_request());
        EXPECT_EQ(plain["choices"][0]["text"], "");
        EXPECT_EQ(plain["usage"]["completion_tokens"], 3);
        json chat = chat_body("x", 3);
        chat["logit_bias"] = {{std::to_string(kReservedToken0), 100}};
        const json message = post_json(server.port(), "/v1/chat/completions", chat)["choices"][0]["message"];
        EXPECT_EQ(message["content"], "");
        EXPECT_FALSE(message.contains("reasoning_content")) << message;
        EXPECT_EQ(server.stop(), 0);
    }
    ServerProcess server(kModel, {"--ctx-size", "256", "--special"});
    const json shown = post_json(server.port(), "/v1/completions", reserved_token_request());
    EXPECT_EQ(shown["choices"][0]["text"], "<|reserved_token_0|><|reserved_token_0|><|reserved_token_0|>");
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerChatTemplateFile, ReplacesTheModelsTemplate) {
    ScratchDir dir;
    const std::string source = "{% for m in messages %}[{{ m.role }}: {{ m.content }}]{% endfor %}";
    write_bytes(dir.file("t.jinja"), source.data(), source.size());
    ServerProcess server(kModel, {"--ctx-size", "256", "--chat-template-file", dir.file("t.jinja")});
    EXPECT_EQ(json::parse(http_request(server.port(), "GET", "/props").body)["chat_template"], source);
    // The prompt is this template's rendering, token for token.
    const json tokens = post_json(server.port(), "/tokenize", {{"content", "[user: hello]"}, {"parse_special", false}});
    const json answer = post_json(server.port(), "/v1/chat/completions", chat_body("hello", 1));
    EXPECT_EQ(answer["usage"]["prompt_tokens"], tokens["tokens"].size());
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerChatTemplateFile, ABadTemplateIsAClearStartupError) {
    ScratchDir dir;
    const std::string broken = "{% for m in messages %}{{ m.content }";
    write_bytes(dir.file("broken.jinja"), broken.data(), broken.size());
    const CommandResult parse = run_k3({"serve", "-m", kModel, "--port", "0", "--chat-template-file", dir.file("broken.jinja")});
    EXPECT_NE(parse.exit_code, 0);
    EXPECT_NE(parse.err.find("--chat-template-file"), std::string::npos) << parse.err;
    const std::string raising = "{{ raise_exception('no chats here') }}";
    write_bytes(dir.file("raising.jinja"), raising.data(), raising.size());
    const CommandResult render = run_k3({"serve", "-m", kModel, "--port", "0", "--chat-template-file", dir.file("raising.jinja")});
    EXPECT_NE(render.exit_code, 0);
    EXPECT_NE(render.err.find("no chats here"), std::string::npos) << render.err;
}

TEST(ServerReasoningFormat, NoneLeavesTheReasoningInTheContent) {
    // tiny-k3 reasons from the generation prompt on, so a greedy answer is reasoning.
    json automatic;
    {
        ServerProcess server(kModel, {"--ctx-size", "256"});
        automatic = post_json(server.port(), "/v1/chat/completions", chat_body("why", 6))["choices"][0]["message"];
        EXPECT_EQ(server.stop(), 0);
    }
    ASSERT_TRUE(automatic.contains("reasoning_content")) << automatic;
    const std::string reasoning = automatic["reasoning_content"];
    ASSERT_FALSE(reasoning.empty());
    ServerProcess server(kModel, {"--ctx-size", "256", "--reasoning-format", "none"});
    const json none = post_json(server.port(), "/v1/chat/completions", chat_body("why", 6))["choices"][0]["message"];
    EXPECT_FALSE(none.contains("reasoning_content")) << none;
    EXPECT_EQ(none["content"], "<think>" + reasoning + "</think>" + automatic["content"].get<std::string>());
    EXPECT_EQ(server.stop(), 0);
}

class ServerChoices : public ::testing::Test {
protected:
    static void SetUpTestSuite() { server_ = new ServerProcess(kModel, {"--parallel", "2", "--ctx-size", "512", "--max-n", "4"}); }
    static void TearDownTestSuite() {
        EXPECT_EQ(server_->stop(), 0);
        delete server_;
    }
    static uint16_t port() { return server_->port(); }
    static ServerProcess* server_;
};
ServerProcess* ServerChoices::server_ = nullptr;

// Many KDA chunks long, so the prompt cache shares most of it.
json long_chat(int n, int max_tokens) {
    std::string text;
    for (int i = 0; i < 40; ++i) text += "word" + std::to_string(i) + " ";
    json body = {{"messages", json::array({{{"role", "user"}, {"content", text}}})},
                 {"max_tokens", max_tokens},
                 {"n", n},
                 {"seed", 1234},
                 {"temperature", 1.0},
                 {"ignore_eos", true}};
    return body;
}

TEST_F(ServerChoices, ThreeChoicesShareOnePrefill) {
    const double fed_before = metric(port(), "k3_prompt_tokens_total");
    const double cached_before = metric(port(), "k3_prompt_tokens_cached_total");
    const json answer = post_json(port(), "/v1/chat/completions", long_chat(3, 4));
    const int64_t n_prompt = answer["usage"]["prompt_tokens"];
    ASSERT_GT(n_prompt, 4 * model::kKdaChunk);
    ASSERT_EQ(answer["choices"].size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(answer["choices"][i]["index"], i);
        EXPECT_EQ(answer["choices"][i]["finish_reason"], "length");
    }
    EXPECT_EQ(answer["usage"]["completion_tokens"], 3 * 4);
    EXPECT_EQ(answer["usage"]["total_tokens"], n_prompt + 3 * 4);
    // Choices 1 and 2 resume from the state choice 0's prefill stored (at a KDA chunk boundary),
    // so only their last partial chunk is fed again.
    const double fed = metric(port(), "k3_prompt_tokens_total") - fed_before;
    const double cached = metric(port(), "k3_prompt_tokens_cached_total") - cached_before;
    const int64_t shared = (n_prompt - 1) / model::kKdaChunk * model::kKdaChunk;
    EXPECT_EQ(cached, 2.0 * double(shared));
    EXPECT_EQ(fed, double(n_prompt + 2 * (n_prompt - shared)));
}

TEST_F(ServerChoices, ASeedReproducesEveryChoiceAndChoiceZeroIsTheSingleAnswer) {
    const json first = post_json(port(), "/v1/chat/completions", long_chat(3, 5));
    const json again = post_json(port(), "/v1/chat/completions", long_chat(3, 5));
    const json single = post_json(port(), "/v1/chat/completions", long_chat(1, 5));
    std::set<std::string> distinct;
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(first["choices"][i]["message"], again["choices"][i]["message"]) << i;
        distinct.insert(first["choices"][i]["message"].dump());
    }
    EXPECT_EQ(first["choices"][0]["message"], single["choices"][0]["message"]);
    EXPECT_GT(distinct.size(), 1u) << "the choices sample with different seeds";
}

TEST_F(ServerChoices, StreamedChoicesCarryTheirIndexAndOneUsage) {
    json body = long_chat(2, 3);
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    const HttpReply reply = http_request(port(), "POST", "/v1/chat/completions", body.dump());
    ASSERT_EQ(reply.status, 200) << reply.body;
    const std::vector<std::string> events = sse_events(reply.body);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back(), "[DONE]");
    std::map<int, int> finished;
    int usages = 0;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
        const json chunk = json::parse(events[i]);
        if (chunk.contains("usage")) {
            ++usages;
            EXPECT_EQ(chunk["usage"]["completion_tokens"], 2 * 3);
            EXPECT_EQ(i + 2, events.size()) << "usage comes last, after every choice finished";
            continue;
        }
        ASSERT_EQ(chunk["choices"].size(), 1u);
        const int index = chunk["choices"][0]["index"];
        EXPECT_TRUE(index == 0 || index == 1);
        if (!chunk["choices"][0]["finish_reason"].is_null()) ++finished[index];
    }
    EXPECT_EQ(usages, 1);
    EXPECT_EQ(finished, (std::map<int, int>{{0, 1}, {1, 1}}));
}

TEST_F(ServerChoices, CompletionsGiveChoicesToo) {
    const json answer =
        post_json(port(), "/v1/completions", {{"prompt", "abc"}, {"max_tokens", 2}, {"n", 2}, {"ignore_eos", true}});
    ASSERT_EQ(answer["choices"].size(), 2u);
    EXPECT_EQ(answer["choices"][1]["index"], 1);
    EXPECT_EQ(answer["usage"]["completion_tokens"], 4);
}

TEST_F(ServerChoices, TooManyChoicesAre400) {
    for (int n : {5, 0}) {
        const HttpReply reply = http_request(port(), "POST", "/v1/chat/completions", long_chat(n, 2).dump());
        EXPECT_EQ(reply.status, 400) << n;
        EXPECT_NE(json::parse(reply.body)["error"]["message"].get<std::string>().find("'n'"), std::string::npos);
    }
    const HttpReply llama = http_request(port(), "POST", "/completion", R"({"prompt": "a", "n": 2})");
    EXPECT_EQ(llama.status, 400);
    EXPECT_EQ(http_request(port(), "GET", "/health").status, 200);
}

// With one slot and room for one waiting request, the third choice finds the queue full: the
// answer still comes, as an error naming why, and the server keeps serving. The other choices are
// launched when choice 0's first token is delivered (on the delivery thread), so choice 0 must
// still hold the slot then: with 3 tokens, a busy CI machine delivered it after choice 0 had ended
// and the slot had taken choice 1 off the queue, which left room for choice 2.
TEST(ServerChoicesRefused, AChoiceTheQueueRefusesEndsTheAnswerWithAnError) {
    constexpr int kMaxTokens = 64;
    ServerProcess server(kModel, {"--parallel", "1", "--queue-size", "1", "--ctx-size", "512"});
    const HttpReply whole =
        http_request(server.port(), "POST", "/v1/chat/completions", long_chat(3, kMaxTokens).dump());
    EXPECT_EQ(whole.status, 500);
    EXPECT_NE(whole.body.find("request queue full"), std::string::npos) << whole.body;
    json body = long_chat(3, kMaxTokens);
    body["stream"] = true;
    const HttpReply streamed = http_request(server.port(), "POST", "/v1/chat/completions", body.dump());
    EXPECT_EQ(streamed.status, 200);
    const std::vector<std::string> events = sse_events(streamed.body);
    EXPECT_EQ(events.back(), "[DONE]");
    EXPECT_NE(streamed.body.find("request queue full"), std::string::npos);
    EXPECT_EQ(post_json(server.port(), "/v1/chat/completions", long_chat(1, 2))["choices"].size(), 1u);
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerChatPage, IsOneSelfContainedPage) {
    ServerProcess server(kModel, {"--ctx-size", "256", "--api-key", "k"});
    const HttpReply page = http_request(server.port(), "GET", "/");  // no key needed for the page
    EXPECT_EQ(page.status, 200);
    EXPECT_TRUE(page.header("content-type").starts_with("text/html"));
    EXPECT_EQ(page.body, read_text(std::string(K3_SOURCE_DIR) + "/src/server/chat_page.html"));
    // Nothing fetched from elsewhere: no external scripts, styles or fonts.
    for (const char* external : {"src=\"http", "href=\"http", "@import", "url("})
        EXPECT_EQ(page.body.find(external), std::string::npos) << external;
    EXPECT_EQ(server.stop(), 0);
}

// The page in headless Chromium: tests/node/chat_page_test.mjs.
TEST(ServerChatPage, StreamsAnswersInHeadlessChromium) {
    const std::string chromium = "/usr/bin/chromium";
    if (!std::filesystem::exists(chromium))
        GTEST_SKIP() << chromium << " is absent (scripts/install-deps.sh installs Debian's chromium)";
    if (const std::string why = node_test_unavailable({"playwright-core"}); !why.empty()) GTEST_SKIP() << why;
    const NodeTestResult result = run_node_test("chat_page_test.mjs", {kModel, chromium});
    EXPECT_EQ(result.status, 0) << result.out;
}

}  // namespace
}  // namespace k3::testing
