// The agent APIs' request translation: an Anthropic /v1/messages body and an OpenAI
// /v1/responses body become the chat-completions bodies written out here by hand from the two
// APIs' documentation, and what cannot be translated is refused naming the field.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "server/anthropic_api.h"
#include "server/responses_api.h"

namespace k3::testing {
namespace {

using server::Json;

// Member order is not part of a JSON object's meaning.
nlohmann::json unordered(const Json& json) { return nlohmann::json::parse(json.dump()); }

std::string refusal(const auto& translate) {
    try {
        translate();
    } catch (const server::ApiError& e) {
        EXPECT_EQ(e.status, 400);
        return e.what();
    }
    ADD_FAILURE() << "not refused";
    return "";
}

TEST(AnthropicRequest, BlocksBecomeChatMessages) {
    const Json body = Json::parse(R"({
      "model": "claude", "max_tokens": 4000, "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
      "messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Look it up.", "signature": "s"},
                                          {"type": "text", "text": "Checking."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "21C"}]},
                                     {"type": "text", "text": "Thanks"}]}],
      "tools": [{"name": "weather", "description": "Weather", "input_schema": {"type": "object"}}],
      "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
      "stop_sequences": ["END"], "temperature": 0.5, "top_k": 5, "stream": true,
      "thinking": {"type": "enabled", "budget_tokens": 2048}, "metadata": {"user_id": "u"}})");
    const Json expected = Json::parse(R"({
      "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."}], "reasoning_content": "Look it up.",
         "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": [{"type": "text", "text": "21C"}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}],
      "tools": [{"type": "function", "function": {"name": "weather", "description": "Weather", "parameters": {"type": "object"}}}],
      "parallel_tool_calls": false, "tool_choice": "required",
      "chat_template_kwargs": {"thinking": true},
      "stop": ["END"], "model": "claude", "max_tokens": 4000, "temperature": 0.5, "top_k": 5, "stream": true})");
    EXPECT_EQ(unordered(server::anthropic::chat_request(body, false)), unordered(expected));
}

TEST(AnthropicRequest, ThinkingIsOffUnlessEnabledAndCountTokensNeedsNoMaxTokens) {
    const Json body = Json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
                                      "tool_choice": {"type": "tool", "name": "f"}})");
    EXPECT_EQ(unordered(server::anthropic::chat_request(body, true)),
              nlohmann::json::parse(R"({"messages": [{"role": "user", "content": "Hi"}],
                                        "tool_choice": {"type": "function", "function": {"name": "f"}},
                                        "chat_template_kwargs": {"thinking": false}})"));
}

TEST(AnthropicRequest, RefusalsNameTheField) {
    auto refused = [](const char* text, bool count = false) {
        return refusal([&] { server::anthropic::chat_request(Json::parse(text), count); });
    };
    EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": "x"}]})"), "'max_tokens' is required");
    EXPECT_EQ(refused(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})", true),
              "'max_tokens' is not supported by k3 on this endpoint");
    EXPECT_EQ(refused(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image"}]}]})"),
              "messages[0].content[0]: block type 'image' is not supported in a user turn (text, tool_result)");
    EXPECT_EQ(refused(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]})"),
              "messages[0].content[0] needs 'tool_use_id'");
    EXPECT_EQ(refused(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
                          "tools": [{"type": "web_search_20250305", "name": "web_search"}]})"),
              "tools[0]: tool type \"web_search_20250305\" is not supported (client tools only)");
    EXPECT_EQ(refused(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x", "name": "n"}]})"),
              "'messages[0].name' is not supported by k3 on this endpoint");
    EXPECT_EQ(refused(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
                          "thinking": {"type": "enabled", "budget_tokens": 5}})"),
              "thinking.budget_tokens must be an integer >= 1024");
}

TEST(ResponsesRequest, ItemsBecomeChatMessages) {
    const Json body = Json::parse(R"({
      "model": "gpt", "instructions": "Be brief.", "max_output_tokens": 50, "store": false,
      "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look it up."}]},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{\"city\":\"Paris\"}", "id": "fc_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": "21C"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 21C.", "annotations": []}]},
        {"role": "developer", "content": "Use Celsius."}],
      "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}, "strict": true}],
      "tool_choice": {"type": "function", "name": "weather"},
      "reasoning": {"effort": "low"}, "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}}}})");
    const Json expected = Json::parse(R"({
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": null, "reasoning_content": "Look it up.",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21C"},
        {"role": "assistant", "content": [{"type": "text", "text": "It is 21C."}]},
        {"role": "system", "content": "Use Celsius."}],
      "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
      "tool_choice": {"type": "function", "function": {"name": "weather"}},
      "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"}}},
      "reasoning_effort": "low", "max_tokens": 50, "model": "gpt"})");
    const server::responses::Translation translation = server::responses::chat_request(body);
    EXPECT_EQ(unordered(translation.chat), unordered(expected));
    EXPECT_EQ(translation.echo["instructions"], "Be brief.");
    EXPECT_EQ(translation.echo["text"]["format"]["type"], "json_schema");
}

TEST(ResponsesRequest, RefusalsNameTheField) {
    auto refused = [](const char* text) { return refusal([&] { server::responses::chat_request(Json::parse(text)); }); };
    EXPECT_EQ(refused(R"({"input": "x", "store": true})"), "'store' must be false: k3 keeps no responses");
    EXPECT_EQ(refused(R"({"input": "x", "previous_response_id": "resp_1"})"),
              "'previous_response_id' is not supported: k3 keeps no responses; send the whole input");
    EXPECT_EQ(refused(R"({"input": [{"type": "input_image"}]})"),
              "input[0]: item type 'input_image' is not supported (message, function_call, function_call_output, reasoning)");
    EXPECT_EQ(refused(R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})"),
              "input[0] needs 'call_id'");
    EXPECT_EQ(refused(R"({"input": "x", "tools": [{"type": "file_search"}]})"),
              "tools[0]: tool type 'file_search' is not supported (function tools only)");
    EXPECT_EQ(refused(R"({"input": "x", "text": {"verbosity": "low"}})"),
              "'text.verbosity' is not supported by k3 on this endpoint");
    EXPECT_EQ(refused(R"({})"), "'input' is required");
    EXPECT_EQ(refused(R"({"input": "x", "include": ["file_search_call.results"]})"),
              "'include[0]' is not supported (reasoning.encrypted_content)");
}

// What Codex sends besides the translated fields: accepted, and nothing of it reaches the chat.
TEST(ResponsesRequest, CodexCacheKeyAndIncludeAreAccepted) {
    const Json body = Json::parse(R"({"input": "hi", "store": false, "parallel_tool_calls": false,
      "prompt_cache_key": "session-1", "include": ["reasoning.encrypted_content"]})");
    const Json chat = server::responses::chat_request(body).chat;
    EXPECT_FALSE(chat.contains("prompt_cache_key"));
    EXPECT_FALSE(chat.contains("include"));
    EXPECT_EQ(chat["messages"], Json::parse(R"([{"role": "user", "content": "hi"}])"));
}

}  // namespace
}  // namespace k3::testing
