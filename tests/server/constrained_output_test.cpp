// `k3 serve` sampling fields at the HTTP level on tiny-k3: grammar-constrained answers for 100
// seeds checked by an independent regular expression; logprobs, logit_bias and penalties
// against values computed here from `k3 eval` logits; every refused field a 400 naming it; the
// JSON-schema answers checked by npm's ajv (tests/node/constrained_output_test.mjs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

const std::string kModel = fixture("tiny-k3/model.gguf");
const std::vector<int32_t> kPrompt = {1000, 72, 101, 108, 108, 111};

// The logits after the last token of `tokens`, from `k3 eval`.
std::vector<float> eval_last_row(const std::vector<int32_t>& tokens) {
    ScratchDir dir;
    std::string list;
    for (int32_t t : tokens) {
        if (!list.empty()) list += ',';
        list += std::to_string(t);
    }
    const CommandResult r = run_k3({"eval", "-m", kModel, "--tokens", list, "--logits-out", dir.file("logits.f32"), "-t", "2"});
    if (r.exit_code != 0) throw std::runtime_error("k3 eval failed: " + r.err);
    const std::vector<uint8_t> bytes = read_bytes(dir.file("logits.f32"));
    const size_t n_vocab = bytes.size() / sizeof(float) / tokens.size();
    std::vector<float> row(n_vocab);
    std::memcpy(row.data(), bytes.data() + (tokens.size() - 1) * n_vocab * sizeof(float), n_vocab * sizeof(float));
    return row;
}

std::vector<int32_t> by_logit(const std::vector<float>& row) {
    std::vector<int32_t> ids(row.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
    return ids;
}

double log_sum_exp(const std::vector<float>& row) {
    const double top = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float l : row) sum += std::exp(double(l) - top);
    return top + std::log(sum);
}

class ConstrainedServer : public ::testing::Test {
protected:
    static void SetUpTestSuite() { server_ = new ServerProcess(kModel, {"--parallel", "4", "--ctx-size", "1024"}); }
    static void TearDownTestSuite() {
        EXPECT_EQ(server_->stop(), 0);
        delete server_;
    }
    static uint16_t port() { return server_->port(); }
    static json post(const std::string& path, const json& body, int expected_status = 200) {
        const HttpReply reply = http_request(port(), "POST", path, body.dump());
        EXPECT_EQ(reply.status, expected_status) << reply.body;
        return json::parse(reply.body);
    }
    static ServerProcess* server_;
};
ServerProcess* ConstrainedServer::server_ = nullptr;

TEST_F(ConstrainedServer, GrammarAnswersParseForAHundredSeeds) {
    const std::string grammar = "root ::= answer (\", \" answer){0,2} \".\"\n"
                                "answer ::= (\"yes\" | \"no\" | [0-9]{1,3}) (\"-\" [a-z]{1,4})?\n";
    // The same language, written independently.
    const std::regex language(R"(((yes|no|[0-9]{1,3})(-[a-z]{1,4})?)(, (yes|no|[0-9]{1,3})(-[a-z]{1,4})?){0,2}\.)");
    std::vector<json> answers;
    for (int first = 0; first < 100; first += 4) {  // as many at once as the server has slots
        std::vector<std::future<json>> batch;
        for (int seed = first; seed < first + 4; ++seed)
            batch.push_back(std::async(std::launch::async, [&, seed] {
                return post("/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 200}, {"seed", seed}, {"grammar", grammar}});
            }));
        for (auto& answer : batch) answers.push_back(answer.get());
    }
    int ended = 0;
    for (int seed = 0; seed < 100; ++seed) {
        const json& body = answers[size_t(seed)];
        const std::string text = body["choices"][0]["text"];
        // The language is finite, so every answer ends (an end token once nothing can follow).
        EXPECT_EQ(body["choices"][0]["finish_reason"], "stop") << "seed " << seed << ": '" << text << "'";
        EXPECT_TRUE(std::regex_match(text, language)) << "seed " << seed << ": '" << text << "'";
        ended += std::regex_match(text, language);
    }
    EXPECT_EQ(ended, 100);
}

TEST_F(ConstrainedServer, LogprobsAreTheModelsLogSoftmax) {
    const std::vector<float> row = eval_last_row(kPrompt);
    const std::vector<int32_t> order = by_logit(row);
    const double norm = log_sum_exp(row);
    const json completions =
        post("/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 3}});
    const json& lp = completions["choices"][0]["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), 1u);
    EXPECT_NEAR(double(lp["token_logprobs"][0]), row[size_t(order[0])] - norm, 1e-4);
    ASSERT_EQ(lp["top_logprobs"][0].size(), 3u);
    const json llama = post("/completion", {{"prompt", kPrompt}, {"n_predict", 1}, {"temperature", 0}, {"n_probs", 3}});
    const json& probs = llama["completion_probabilities"][0];
    EXPECT_EQ(probs["id"], order[0]);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(probs["top_logprobs"][size_t(i)]["id"], order[size_t(i)]);
        EXPECT_NEAR(double(probs["top_logprobs"][size_t(i)]["logprob"]), row[size_t(order[size_t(i)])] - norm, 1e-4);
    }
}

TEST_F(ConstrainedServer, LogitBiasMovesTheGreedyChoiceAsComputed) {
    const std::vector<float> row = eval_last_row(kPrompt);
    const std::vector<int32_t> order = by_logit(row);
    auto first_token = [&](const json& bias) {
        const json body = post("/completion", {{"prompt", kPrompt}, {"n_predict", 1}, {"temperature", 0}, {"logit_bias", bias}});
        return int32_t(body["tokens"][0]);
    };
    EXPECT_EQ(first_token(json::object()), order[0]);
    // The third best lifted just past the best; the best forbidden (llama.cpp's false).
    const float lift = row[size_t(order[0])] - row[size_t(order[2])] + 0.01f;
    EXPECT_EQ(first_token({{std::to_string(order[2]), lift}}), order[2]);
    EXPECT_EQ(first_token(json::array({json::array({order[0], false})})), order[1]);
}

TEST_F(ConstrainedServer, PenaltiesFollowLlamaCppsFormulaOnEvalLogits) {
    // Greedy token 1 is t1; for token 2 the model's logits after t1 are penalised on t1 only.
    const int32_t t1 = by_logit(eval_last_row(kPrompt))[0];
    std::vector<int32_t> extended = kPrompt;
    extended.push_back(t1);
    std::vector<float> row = eval_last_row(extended);
    const float repeat = 1.5f, frequency = 0.75f, presence = 1.25f;
    float& l = row[size_t(t1)];
    l = l <= 0 ? l * repeat : l / repeat;
    l -= frequency + presence;
    const int32_t expected = by_logit(row)[0];
    const json body = post("/completion", {{"prompt", kPrompt}, {"n_predict", 2}, {"temperature", 0},
                                           {"repeat_penalty", repeat}, {"frequency_penalty", frequency},
                                           {"presence_penalty", presence}});
    ASSERT_EQ(body["tokens"].size(), 2u);
    EXPECT_EQ(body["tokens"][0], t1);
    EXPECT_EQ(body["tokens"][1], expected);
}

TEST_F(ConstrainedServer, SameSeedSameAnswer) {
    const json request = {{"prompt", kPrompt}, {"max_tokens", 12}, {"temperature", 1.0}, {"seed", 1234}};
    const json a = post("/v1/completions", request), b = post("/v1/completions", request);
    EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
}

TEST_F(ConstrainedServer, BadGrammarsSchemasAndFieldsGet400sNamingThem) {
    auto error_of = [](const std::string& path, const json& body) {
        const HttpReply reply = http_request(port(), "POST", path, body.dump());
        EXPECT_EQ(reply.status, 400) << body.dump() << " -> " << reply.body;
        return json::parse(reply.body)["error"]["message"].get<std::string>();
    };
    auto with = [](json extra) {
        json body = {{"prompt", "x"}, {"max_tokens", 2}};
        body.update(extra);
        return body;
    };
    const std::string c = "/v1/completions";
    EXPECT_NE(error_of(c, with({{"grammar", "root ::= item\n"}})).find("rule 'item'"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"grammar", "root ::= root \"a\" | \"a\""}})).find("left-recursive"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"grammar", "root ::= \"a\" root"}})).find("can match nothing"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"grammar", "root ::= \"a\" ("}})).find("line 1, column"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"grammar", "root ::= \"a\"{99999999}"}})).find("max_elements"), std::string::npos);
    // Exponentially many parse states from the first code point on: bounded, and named.
    std::string wide = "root ::= \"\"";
    for (int i = 0; i < 5000; ++i) wide += " | \"a" + std::to_string(i) + "\"";
    EXPECT_NE(error_of(c, with({{"grammar", wide}})).find("max_stacks"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"json_schema", {{"type", "integer"}, {"minimum", 0}}}})).find("'minimum'"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"grammar", "root ::= \"a\""}, {"json_schema", json::object()}})).find("at most one"),
              std::string::npos);
    EXPECT_NE(error_of(c, with({{"response_format", {{"type", "xml"}}}})).find("'xml'"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"echo", true}})).find("'echo'"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"logit_bias", {{"abc", 1}}}})).find("'abc'"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"logit_bias", {{"99999", 1}}}})).find("99999"), std::string::npos);
    EXPECT_NE(error_of(c, with({{"grammar", "root ::= \"a\""}, {"ignore_eos", true}})).find("ignore_eos"), std::string::npos);
    const std::string chat = "/v1/chat/completions";
    const json messages = json::array({{{"role", "user"}, {"content", "x"}}});
    EXPECT_NE(error_of(chat, {{"messages", messages}, {"top_logprobs", 2}}).find("'logprobs'"), std::string::npos);
    EXPECT_NE(error_of(chat, {{"messages", messages}, {"reasoning_effort", "extreme"}}).find("reasoning_effort"), std::string::npos);
    EXPECT_NE(error_of(chat, {{"messages", messages}, {"tool_choice", "required"}}).find("required"), std::string::npos);
    EXPECT_NE(error_of(chat, {{"messages", messages}, {"n", 0}}).find("'n'"), std::string::npos);
    // Still serving.
    EXPECT_EQ(http_request(port(), "GET", "/health").status, 200);
}

TEST_F(ConstrainedServer, ToolChoiceNoneAndReasoningEffortAreAccepted) {
    const json tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}}});
    const json messages = json::array({{{"role", "user"}, {"content", "x"}}});
    const json none = post("/v1/chat/completions", {{"messages", messages}, {"tools", tools}, {"tool_choice", "none"},
                                                    {"max_tokens", 30}, {"seed", 3}});
    EXPECT_FALSE(none["choices"][0]["message"].contains("tool_calls"));
    EXPECT_NE(none["choices"][0]["finish_reason"], "tool_calls");
    for (const char* effort : {"none", "low", "medium", "high"})
        post("/v1/chat/completions", {{"messages", messages}, {"reasoning_effort", effort}, {"max_tokens", 2}});
}

TEST_F(ConstrainedServer, ForcedToolCallsCallADeclaredToolWithValidArguments) {
    const json tools = json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string", "maxLength": 8}, "days": {"type": "integer"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "a&b \"q\"", "parameters": {"type": "object",
            "properties": {"x": {"type": "boolean"}}, "required": ["x"]}}}])");
    const json messages = json::array({{{"role", "user"}, {"content", "weather?"}}});
    auto check_call = [](const json& call) {
        const json arguments = json::parse(call["function"]["arguments"].get<std::string>());
        if (call["function"]["name"] == "get_weather") {
            ASSERT_TRUE(arguments["city"].is_string());
            EXPECT_LE(arguments["city"].get<std::string>().size(), 8u * 4);  // at most 8 code points
            if (arguments.contains("days")) {
                EXPECT_TRUE(arguments["days"].is_number_integer());
            }
        } else {
            EXPECT_EQ(call["function"]["name"], "a&b \"q\"");  // the markup's escaping undone
            EXPECT_TRUE(arguments["x"].is_boolean());
        }
    };
    int called = 0;
    for (int seed = 0; seed < 12; ++seed) {
        const json body = post("/v1/chat/completions", {{"messages", messages}, {"tools", tools}, {"tool_choice", "required"},
                                                         {"max_tokens", 300}, {"seed", seed},
                                                         {"chat_template_kwargs", {{"thinking", false}}}});
        const json& choice = body["choices"][0];
        if (choice["finish_reason"] == "length") continue;  // the free text before the call ran long
        ASSERT_EQ(choice["finish_reason"], "tool_calls") << body.dump();
        ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
        check_call(choice["message"]["tool_calls"][0]);
        ++called;
    }
    EXPECT_GE(called, 3);
    const json named = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    for (int seed = 0; seed < 6; ++seed) {
        const json body = post("/v1/chat/completions", {{"messages", messages}, {"tools", tools}, {"tool_choice", named},
                                                         {"max_tokens", 300}, {"seed", seed},
                                                         {"chat_template_kwargs", {{"thinking", false}}}});
        const json& choice = body["choices"][0];
        if (choice["finish_reason"] == "length") continue;
        ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << body.dump();
        EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
        check_call(choice["message"]["tool_calls"][0]);
    }
}

TEST(ServerDefaults, SamplingDefaultsAndGrammarFileApplyWhenTheRequestGivesNone) {
    ScratchDir dir;
    const std::string grammar = "root ::= [a-z]{2,40}\n";
    write_bytes(dir.file("words.gbnf"), grammar.data(), grammar.size());
    ServerProcess server(kModel, {"--ctx-size", "256", "--temp", "0", "-n", "3", "--grammar-file", dir.file("words.gbnf")});
    auto complete = [&](json body) {
        body["prompt"] = kPrompt;
        const HttpReply reply = http_request(server.port(), "POST", "/v1/completions", body.dump());
        EXPECT_EQ(reply.status, 200) << reply.body;
        return json::parse(reply.body);
    };
    const json first = complete(json::object());
    const std::string text = first["choices"][0]["text"];
    EXPECT_EQ(first["usage"]["completion_tokens"], 3);  // -n 3
    EXPECT_TRUE(std::regex_match(text, std::regex("[a-z]+"))) << text;  // the grammar file
    EXPECT_EQ(complete(json::object())["choices"][0]["text"], text);    // --temp 0: greedy
    EXPECT_EQ(complete({{"grammar", "root ::= \"ok\""}})["choices"][0]["text"], "ok");  // the request's own
    // A grammar file that does not parse stops the server at start, naming it.
    const std::string bad = "root ::= missing\n";
    write_bytes(dir.file("bad.gbnf"), bad.data(), bad.size());
    const CommandResult r = run_k3({"serve", "-m", kModel, "--port", "0", "--grammar-file", dir.file("bad.gbnf")});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--grammar-file: grammar: rule 'missing'"), std::string::npos) << r.err;
}

TEST(ConstrainedClient, JsonSchemaAnswersValidateWithAjv) {
    if (const std::string why = node_test_unavailable({"openai", "ajv"}); !why.empty()) GTEST_SKIP() << why;
    const NodeTestResult result = run_node_test("constrained_output_test.mjs", {kModel});
    EXPECT_EQ(result.status, 0) << result.out;
}

}  // namespace
}  // namespace k3::testing
