#include "server/responses_api.h"

// The request translation (chat_request); the answer's shape is in responses_api.cpp.
namespace k3::server::responses {

namespace {

// A message's content: a string, or input_text / output_text parts, as chat content.
Json message_content(const Json& content, const std::string& where) {
    if (content.is_string()) return content;
    if (!content.is_array()) wrong_type(where, "a string or an array of content parts");
    Json parts = Json::array();
    for (size_t i = 0; i < content.size(); ++i) {
        const std::string at = indexed(where, i);
        if (!content[i].is_object()) wrong_type(at, "an object");
        const std::string& type = required_string(content[i], "type", at);
        if (type != "input_text" && type != "output_text")
            throw ApiError(400, at + ": content type '" + type + "' is not supported (input_text, output_text)",
                           "invalid_value");
        refuse_unknown_members(content[i], {"type", "text", "annotations", "logprobs"}, at + ".");
        parts.push_back({{"type", "text"}, {"text", required_string(content[i], "text", at)}});
    }
    return parts;
}

// The chat message for the next item of an assistant's answer: a reasoning item opens a new
// turn, the answer's message joins a turn that holds only reasoning, a function call joins the
// turn before it.
enum class AnswerItem { reasoning, message, function_call };
Json& assistant_turn(Json& messages, AnswerItem item) {
    Json* last = messages.empty() || messages.back()["role"] != "assistant" ? nullptr : &messages.back();
    const bool joins = last && (item == AnswerItem::function_call ||
                                (item == AnswerItem::message && !last->contains("tool_calls") && (*last)["content"] == ""));
    if (joins) return *last;
    messages.push_back({{"role", "assistant"}, {"content", ""}});
    return messages.back();
}

void add_input_item(const Json& entry, const std::string& at, Json& messages) {
    if (!entry.is_object()) wrong_type(at, "an object");
    const Json* type_member = member(entry, "type");
    if (type_member && !type_member->is_string()) wrong_type(at + ".type", "a string");
    const std::string type = type_member ? type_member->get<std::string>() : "message";
    if (type == "message") {
        refuse_unknown_members(entry, {"type", "role", "content", "id", "status"}, at + ".");
        std::string role = required_string(entry, "role", at);
        const Json* content = member(entry, "content");
        if (!content) throw ApiError(400, at + " needs 'content'", "missing_field");
        if (role == "developer") role = "system";
        if (role == "assistant") {
            Json& turn = assistant_turn(messages, AnswerItem::message);
            turn["content"] = message_content(*content, at + ".content");
        } else if (role == "user" || role == "system") {
            messages.push_back({{"role", role}, {"content", message_content(*content, at + ".content")}});
        } else {
            throw ApiError(400, at + ".role must be user, system, developer or assistant", "invalid_value");
        }
    } else if (type == "function_call") {
        refuse_unknown_members(entry, {"type", "call_id", "name", "arguments", "id", "status"}, at + ".");
        Json& turn = assistant_turn(messages, AnswerItem::function_call);
        if (!turn.contains("tool_calls")) {
            turn["tool_calls"] = Json::array();
            if (turn["content"] == "") turn["content"] = nullptr;
        }
        turn["tool_calls"].push_back({{"id", required_string(entry, "call_id", at)},
                                      {"type", "function"},
                                      {"function", {{"name", required_string(entry, "name", at)},
                                                    {"arguments", required_string(entry, "arguments", at)}}}});
    } else if (type == "function_call_output") {
        refuse_unknown_members(entry, {"type", "call_id", "output", "id", "status"}, at + ".");
        const Json* output = member(entry, "output");
        if (!output) throw ApiError(400, at + " needs 'output'", "missing_field");
        messages.push_back({{"role", "tool"},
                            {"tool_call_id", required_string(entry, "call_id", at)},
                            {"content", message_content(*output, at + ".output")}});
    } else if (type == "reasoning") {
        // The reasoning text if the client kept it, else its summary; encrypted_content is
        // another server's and means nothing to k3.
        refuse_unknown_members(entry, {"type", "id", "summary", "content", "encrypted_content", "status"}, at + ".");
        std::string reasoning;
        for (const char* key : {"content", "summary"}) {
            const Json* parts = member(entry, key);
            if (!parts) continue;
            if (!parts->is_array()) wrong_type(at + "." + key, "an array");
            for (size_t i = 0; i < parts->size(); ++i) {
                const std::string part_at = indexed(at + "." + key, i);
                if (!(*parts)[i].is_object()) wrong_type(part_at, "an object");
                refuse_unknown_members((*parts)[i], {"type", "text"}, part_at + ".");
                reasoning += required_string((*parts)[i], "text", part_at);
            }
            if (!reasoning.empty()) break;
        }
        assistant_turn(messages, AnswerItem::reasoning)["reasoning_content"] = reasoning;
    } else {
        throw ApiError(400, at + ": item type '" + type +
                                "' is not supported (message, function_call, function_call_output, reasoning)",
                       "invalid_value");
    }
}

Json chat_messages(const Json& body) {
    Json messages = Json::array();
    if (const Json* instructions = member(body, "instructions")) {
        if (!instructions->is_string()) wrong_type("instructions", "a string");
        messages.push_back({{"role", "system"}, {"content", *instructions}});
    }
    const Json* input = member(body, "input");
    if (!input) throw ApiError(400, "'input' is required", "missing_field");
    if (input->is_string()) {
        messages.push_back({{"role", "user"}, {"content", *input}});
    } else if (input->is_array()) {
        if (input->empty()) throw ApiError(400, "'input' must not be empty", "invalid_value");
        for (size_t i = 0; i < input->size(); ++i) add_input_item((*input)[i], indexed("input", i), messages);
    } else {
        wrong_type("input", "a string or an array of input items");
    }
    return messages;
}

Json chat_tools(const Json& tools) {
    return chat_function_tools(tools, "parameters", [](const Json& tool, const std::string& at) {
        const std::string& type = required_string(tool, "type", at);
        if (type != "function")
            throw ApiError(400, at + ": tool type '" + type + "' is not supported (function tools only)", "invalid_value");
        refuse_unknown_members(tool, {"type", "name", "description", "parameters", "strict"}, at + ".");
    });
}

// "auto" / "none" / "required" pass; {"type": "function", "name"} becomes chat's nested form.
Json chat_tool_choice(const Json& choice) {
    if (choice.is_string()) return choice;
    if (!choice.is_object() || !member(choice, "type") || choice["type"] != "function")
        throw ApiError(400, "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\"}",
                       "invalid_value");
    refuse_unknown_members(choice, {"type", "name"}, "tool_choice.");
    return {{"type", "function"}, {"function", {{"name", required_string(choice, "name", "tool_choice")}}}};
}

// text.format: text, json_object, or json_schema {name, schema, strict} as chat's response_format.
std::optional<Json> chat_response_format(const Json& text) {
    if (!text.is_object()) wrong_type("text", "an object");
    refuse_unknown_members(text, {"format"}, "text.");
    const Json* format = member(text, "format");
    if (!format) return std::nullopt;
    if (!format->is_object()) wrong_type("text.format", "an object");
    const std::string& type = required_string(*format, "type", "text.format");
    if (type == "text") return std::nullopt;
    if (type == "json_object") return Json{{"type", "json_object"}};
    if (type != "json_schema")
        throw ApiError(400, "text.format.type must be text, json_object or json_schema", "invalid_value");
    refuse_unknown_members(*format, {"type", "name", "schema", "strict", "description"}, "text.format.");
    const Json* schema = member(*format, "schema");
    if (!schema) throw ApiError(400, "text.format needs 'schema'", "missing_field");
    return Json{{"type", "json_schema"}, {"json_schema", {{"name", required_string(*format, "name", "text.format")},
                                                          {"schema", *schema}}}};
}

}  // namespace

Translation chat_request(const Json& body) {
    refuse_unknown_members(body, {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
                                  "max_output_tokens", "temperature", "top_p", "reasoning", "text", "stream",
                                  "store", "previous_response_id", "metadata", "truncation", "prompt_cache_key",
                                  "include"}, "");
    if (member(body, "previous_response_id"))
        throw ApiError(400, "'previous_response_id' is not supported: k3 keeps no responses; send the whole input",
                       "unsupported_field");
    if (const Json* store = member(body, "store"); store && *store != false)
        throw ApiError(400, "'store' must be false: k3 keeps no responses", "unsupported_field");
    if (const Json* truncation = member(body, "truncation"); truncation && *truncation != "disabled")
        throw ApiError(400, "'truncation' must be \"disabled\": k3 never drops input", "invalid_value");
    if (const Json* metadata = member(body, "metadata"); metadata && !metadata->is_object())
        wrong_type("metadata", "an object");
    // Codex sends both. k3 caches every prompt prefix whatever the key, and its reasoning items
    // carry their text in the clear, so a client never needs their encrypted form back.
    if (const Json* key = member(body, "prompt_cache_key"); key && !key->is_string())
        wrong_type("prompt_cache_key", "a string");
    if (const Json* include = member(body, "include")) {
        if (!include->is_array()) wrong_type("include", "an array");
        for (size_t i = 0; i < include->size(); ++i)
            if ((*include)[i] != "reasoning.encrypted_content")
                throw ApiError(400, "'" + indexed("include", i) + "' is not supported (reasoning.encrypted_content)",
                               "unsupported_field");
    }

    Translation out;
    Json& chat = out.chat;
    chat["messages"] = chat_messages(body);
    if (const Json* tools = member(body, "tools")) chat["tools"] = chat_tools(*tools);
    if (const Json* choice = member(body, "tool_choice")) chat["tool_choice"] = chat_tool_choice(*choice);
    Json format = {{"type", "text"}};
    if (const Json* text = member(body, "text")) {
        if (std::optional<Json> response_format = chat_response_format(*text)) {
            chat["response_format"] = *response_format;
            format = (*text)["format"];
        }
    }
    Json reasoning = {{"effort", nullptr}, {"summary", nullptr}};
    if (const Json* settings = member(body, "reasoning")) {
        if (!settings->is_object()) wrong_type("reasoning", "an object");
        refuse_unknown_members(*settings, {"effort", "summary"}, "reasoning.");
        if (const Json* effort = member(*settings, "effort")) chat["reasoning_effort"] = *effort;
        // The reasoning comes whole (reasoning_text); a summary of it is not made.
        if (const Json* summary = member(*settings, "summary"); summary && !summary->is_string())
            wrong_type("reasoning.summary", "a string");
        reasoning.update(*settings);
    }
    // Validated by the chat path under these names.
    if (const Json* limit = member(body, "max_output_tokens")) chat["max_tokens"] = *limit;
    for (const char* key : {"model", "temperature", "top_p", "stream", "parallel_tool_calls"})
        if (const Json* value = member(body, key)) chat[key] = *value;

    auto given = [&](const char* key, Json fallback) {
        const Json* value = member(body, key);
        return value ? *value : fallback;
    };
    out.echo = {{"instructions", given("instructions", nullptr)},
                {"max_output_tokens", given("max_output_tokens", nullptr)},
                {"parallel_tool_calls", given("parallel_tool_calls", true)},
                {"previous_response_id", nullptr},
                {"reasoning", reasoning},
                {"store", false},
                {"temperature", given("temperature", 1.0)},
                {"text", {{"format", format}}},
                {"tool_choice", given("tool_choice", "auto")},
                {"tools", given("tools", Json::array())},
                {"top_p", given("top_p", 1.0)},
                {"truncation", "disabled"},
                {"metadata", given("metadata", Json::object())}};
    return out;
}

}  // namespace k3::server::responses
