// The one generation path (issue #15): the same request through `k3 run --json` and through
// `k3 serve` gives the same tokens, text, finish_reason and usage, greedy and seeded (with
// nothing but the seed given, so the sampling defaults must agree too), cut by a stop string or
// by the context, raw and through the chat template.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

const std::string kModel = fixture("tiny-k3/model.gguf");
const std::vector<int32_t> kPrompt = {1000, 72, 101, 108, 108, 111};

std::string join_ids(const std::vector<int32_t>& ids) {
    std::string text;
    for (int32_t id : ids) {
        if (!text.empty()) text += ',';
        text += std::to_string(id);
    }
    return text;
}

json run_json(std::vector<std::string> args) {
    args.insert(args.begin(), {"run", "-m", kModel, "--json", "-q", "-t", "2"});
    const CommandResult r = run_k3(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
}

json post(const ServerProcess& server, const std::string& path, json body) {
    body["cache_prompt"] = false;  // as a fresh `k3 run` computes it: nothing cached
    const HttpReply reply = http_request(server.port(), "POST", path, body.dump());
    EXPECT_EQ(reply.status, 200) << reply.body;
    return json::parse(reply.body);
}

// `k3 run --raw` with `cli_args` against /completion (tokens) and /v1/completions (text,
// finish_reason, usage) with `fields`.
void expect_raw_parity(const ServerProcess& server, const std::vector<std::string>& cli_args, const json& fields) {
    std::vector<std::string> args = {"--tokens", join_ids(kPrompt)};
    args.insert(args.end(), cli_args.begin(), cli_args.end());
    const json cli = run_json(args);
    json body = fields;
    body["prompt"] = kPrompt;
    const json llama = post(server, "/completion", body);
    const json openai = post(server, "/v1/completions", body);
    EXPECT_EQ(cli["tokens"], llama["tokens"]) << fields.dump();
    EXPECT_EQ(cli["text"], llama["content"]) << fields.dump();
    EXPECT_EQ(cli["text"], openai["choices"][0]["text"]) << fields.dump();
    EXPECT_EQ(cli["finish_reason"], openai["choices"][0]["finish_reason"]) << fields.dump();
    EXPECT_EQ(cli["usage"], openai["usage"]) << fields.dump();
    EXPECT_EQ(cli["usage"]["completion_tokens"], cli["tokens"].size());
}

TEST(CliServerParity, RawGreedySeededStopStringAndContext) {
    ServerProcess server(kModel, {"--ctx-size", "64"});
    expect_raw_parity(server, {"-c", "64", "--temp", "0", "-n", "24"}, {{"temperature", 0}, {"max_tokens", 24}});
    // Only the seed: both sample with the same defaults.
    expect_raw_parity(server, {"-c", "64", "--seed", "7", "-n", "24"}, {{"seed", 7}, {"max_tokens", 24}});
    expect_raw_parity(server, {"-c", "64", "--seed", "11", "--temp", "1.5", "--top-k", "0", "-n", "24"},
                      {{"seed", 11}, {"temperature", 1.5}, {"top_k", 0}, {"max_tokens", 24}});

    // A stop string taken from the greedy text: finish_reason "stop", the text cut before it.
    const json greedy = run_json({"--tokens", join_ids(kPrompt), "--temp", "0", "-n", "24"});
    const std::string text = greedy["text"];
    size_t at = text.size() / 2;
    while (at + 2 < text.size() && (text[at] & 0x80 || text[at + 1] & 0x80)) ++at;
    ASSERT_LT(at + 2, text.size()) << text;
    const std::string stop = text.substr(at, 2);
    expect_raw_parity(server, {"-c", "64", "--temp", "0", "-n", "24", "--stop", stop},
                      {{"temperature", 0}, {"max_tokens", 24}, {"stop", json::array({stop})}});
    const json stopped = run_json({"--tokens", join_ids(kPrompt), "--temp", "0", "-n", "24", "--stop", stop});
    EXPECT_EQ(stopped["finish_reason"], "stop");
    EXPECT_EQ(stopped["text"], text.substr(0, text.find(stop)));

    // No limit but the 64-token context: "length" in both, the same tokens.
    expect_raw_parity(server, {"-c", "64", "--temp", "0", "-n", "-1"}, {{"temperature", 0}});
    const json full = run_json({"--tokens", join_ids(kPrompt), "-c", "64", "--temp", "0", "-n", "-1"});
    EXPECT_EQ(full["finish_reason"], "length");
    EXPECT_EQ(full["tokens"].size(), 64u - kPrompt.size());
}

TEST(CliServerParity, ChatThroughTheTemplateGreedyAndSeeded) {
    ServerProcess server(kModel, {"--ctx-size", "256"});
    for (const json& sampling : {json{{"temperature", 0}}, json{{"seed", 5}}}) {
        std::vector<std::string> args = {"-p", "Hello there", "-c", "256", "-n", "40"};
        if (sampling.contains("seed")) args.insert(args.end(), {"--seed", "5"});
        else args.insert(args.end(), {"--temp", "0"});
        const json cli = run_json(args);
        EXPECT_FALSE(cli["text"].get<std::string>().empty());
        json body = sampling;
        body["max_tokens"] = 40;
        body["messages"] = json::array({{{"role", "user"}, {"content", "Hello there"}}});
        const json reply = post(server, "/v1/chat/completions", body);
        const json& message = reply["choices"][0]["message"];
        EXPECT_EQ(cli["content"], message["content"].is_null() ? json("") : message["content"]) << sampling.dump();
        EXPECT_EQ(cli["reasoning_content"], message.value("reasoning_content", "")) << sampling.dump();
        EXPECT_EQ(cli["tool_calls"].size(), message.value("tool_calls", json::array()).size()) << sampling.dump();
        EXPECT_EQ(cli["usage"], reply["usage"]) << sampling.dump();
        const std::string cli_finish = cli["finish_reason"];
        EXPECT_EQ(cli_finish == "stop" && !cli["tool_calls"].empty() ? "tool_calls" : cli_finish,
                  reply["choices"][0]["finish_reason"])
            << sampling.dump();
    }
}

}  // namespace
}  // namespace k3::testing
