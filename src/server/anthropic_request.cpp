#include "server/anthropic_api.h"

// The request translation (chat_request); the answer's shape is in anthropic_api.cpp.
namespace k3::server::anthropic {

namespace {

// The block's "type", which every content block, tool choice and thinking setting has.
const std::string& block_type(const Json& block, const std::string& where) {
    if (!block.is_object()) wrong_type(where, "an object");
    return required_string(block, "type", where);
}

// cache_control marks are accepted and need nothing: k3 caches every prompt's prefixes.
Json text_part(const Json& block, const std::string& where) {
    refuse_unknown_members(block, {"type", "text", "cache_control", "citations"}, where + ".");
    return {{"type", "text"}, {"text", required_string(block, "text", where)}};
}

// A string or an array of text blocks (system prompts, tool results) as chat content.
Json text_content(const Json& content, const std::string& where) {
    if (content.is_string()) return content;
    if (!content.is_array()) wrong_type(where, "a string or an array of text blocks");
    Json parts = Json::array();
    for (size_t i = 0; i < content.size(); ++i) {
        const std::string at = indexed(where, i);
        if (block_type(content[i], at) != "text")
            throw ApiError(400, at + ": only text blocks are supported here", "invalid_value");
        parts.push_back(text_part(content[i], at));
    }
    return parts;
}

// A user turn: its text blocks as a user message, each tool_result as a tool message, in order.
void add_user_turn(const Json& blocks, const std::string& where, Json& out) {
    Json parts = Json::array();
    auto flush = [&] {
        if (!parts.empty()) out.push_back({{"role", "user"}, {"content", parts}});
        parts = Json::array();
    };
    for (size_t i = 0; i < blocks.size(); ++i) {
        const std::string at = indexed(where, i);
        const std::string& type = block_type(blocks[i], at);
        if (type == "text") {
            parts.push_back(text_part(blocks[i], at));
        } else if (type == "tool_result") {
            refuse_unknown_members(blocks[i], {"type", "tool_use_id", "content", "is_error", "cache_control"}, at + ".");
            if (const Json* is_error = member(blocks[i], "is_error"); is_error && !is_error->is_boolean())
                wrong_type(at + ".is_error", "a boolean");
            const Json* content = member(blocks[i], "content");
            flush();
            out.push_back({{"role", "tool"},
                           {"tool_call_id", required_string(blocks[i], "tool_use_id", at)},
                           {"content", content ? text_content(*content, at + ".content") : Json("")}});
        } else {
            throw ApiError(400, at + ": block type '" + type + "' is not supported in a user turn (text, tool_result)",
                           "invalid_value");
        }
    }
    flush();
}

// An assistant turn: text as content, thinking as reasoning_content, tool_use as tool_calls.
Json assistant_message(const Json& blocks, const std::string& where) {
    Json parts = Json::array(), calls = Json::array();
    std::string reasoning;
    for (size_t i = 0; i < blocks.size(); ++i) {
        const std::string at = indexed(where, i);
        const std::string& type = block_type(blocks[i], at);
        if (type == "text") {
            parts.push_back(text_part(blocks[i], at));
        } else if (type == "thinking") {
            refuse_unknown_members(blocks[i], {"type", "thinking", "signature"}, at + ".");
            reasoning += required_string(blocks[i], "thinking", at);
        } else if (type == "tool_use") {
            refuse_unknown_members(blocks[i], {"type", "id", "name", "input", "cache_control"}, at + ".");
            const Json* input = member(blocks[i], "input");
            if (!input || !input->is_object()) wrong_type(at + ".input", "an object");
            calls.push_back({{"id", required_string(blocks[i], "id", at)},
                             {"type", "function"},
                             {"function", {{"name", required_string(blocks[i], "name", at)}, {"arguments", dump_json(*input)}}}});
        } else {
            throw ApiError(400, at + ": block type '" + type +
                                    "' is not supported in an assistant turn (text, thinking, tool_use)",
                           "invalid_value");
        }
    }
    Json message = {{"role", "assistant"}};
    message["content"] = !parts.empty() ? parts : calls.empty() ? Json("") : Json(nullptr);
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    if (!calls.empty()) message["tool_calls"] = calls;
    return message;
}

Json chat_messages(const Json& body) {
    Json out = Json::array();
    if (const Json* system = member(body, "system"))
        out.push_back({{"role", "system"}, {"content", text_content(*system, "system")}});
    const Json* messages = member(body, "messages");
    if (!messages) throw ApiError(400, "'messages' is required", "missing_field");
    if (!messages->is_array()) wrong_type("messages", "an array");
    if (messages->empty()) throw ApiError(400, "'messages' must not be empty", "invalid_value");
    for (size_t i = 0; i < messages->size(); ++i) {
        const Json& message = (*messages)[i];
        const std::string at = indexed("messages", i);
        if (!message.is_object()) wrong_type(at, "an object");
        refuse_unknown_members(message, {"role", "content"}, at + ".");
        const std::string& role = required_string(message, "role", at);
        if (role != "user" && role != "assistant")
            throw ApiError(400, at + ".role must be \"user\" or \"assistant\" (the system prompt is 'system')",
                           "invalid_value");
        const Json* content = member(message, "content");
        if (!content) throw ApiError(400, at + " needs 'content'", "missing_field");
        if (content->is_string()) {
            out.push_back({{"role", role}, {"content", *content}});
        } else if (!content->is_array()) {
            wrong_type(at + ".content", "a string or an array of content blocks");
        } else if (role == "user") {
            add_user_turn(*content, at + ".content", out);
        } else {
            out.push_back(assistant_message(*content, at + ".content"));
        }
    }
    return out;
}

Json chat_tools(const Json& tools) {
    return chat_function_tools(tools, "input_schema", [](const Json& tool, const std::string& at) {
        if (const Json* type = member(tool, "type"); type && *type != "custom")
            throw ApiError(400, at + ": tool type " + type->dump() + " is not supported (client tools only)",
                           "invalid_value");
        refuse_unknown_members(tool, {"type", "name", "description", "input_schema", "cache_control"}, at + ".");
        const Json* schema = member(tool, "input_schema");
        if (!schema || !schema->is_object()) wrong_type(at + ".input_schema", "an object (a JSON schema)");
    });
}

// auto / any / tool / none as chat's "auto" / "required" / a named function / "none".
void add_tool_choice(const Json& choice, Json& chat) {
    const std::string& type = block_type(choice, "tool_choice");
    refuse_unknown_members(choice, {"type", "name", "disable_parallel_tool_use"}, "tool_choice.");
    if (const Json* serial = member(choice, "disable_parallel_tool_use")) {
        if (!serial->is_boolean()) wrong_type("tool_choice.disable_parallel_tool_use", "a boolean");
        chat["parallel_tool_calls"] = !serial->get<bool>();
    }
    if (type == "auto" || type == "none") {
        chat["tool_choice"] = type;
    } else if (type == "any") {
        chat["tool_choice"] = "required";
    } else if (type == "tool") {
        chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", required_string(choice, "name", "tool_choice")}}}};
    } else {
        throw ApiError(400, "tool_choice.type must be auto, any, tool or none", "invalid_value");
    }
}

// Extended thinking on or off; off when not asked for, as Anthropic's models answer by default.
bool thinking_enabled(const Json& body) {
    const Json* thinking = member(body, "thinking");
    if (!thinking) return false;
    const std::string& type = block_type(*thinking, "thinking");
    refuse_unknown_members(*thinking, {"type", "budget_tokens"}, "thinking.");
    if (type == "disabled") return false;
    if (type != "enabled") throw ApiError(400, "thinking.type must be \"enabled\" or \"disabled\"", "invalid_value");
    const Json* budget = member(*thinking, "budget_tokens");
    if (!budget || !budget->is_number_integer() || budget->get<int64_t>() < 1024)
        throw ApiError(400, "thinking.budget_tokens must be an integer >= 1024", "invalid_value");
    const Json* max_tokens = member(body, "max_tokens");
    if (max_tokens && max_tokens->is_number_integer() && budget->get<int64_t>() >= max_tokens->get<int64_t>())
        throw ApiError(400, "thinking.budget_tokens must be less than max_tokens", "invalid_value");
    return true;
}


}  // namespace

Json chat_request(const Json& body, bool count_tokens) {
    if (count_tokens)
        refuse_unknown_members(body, {"model", "messages", "system", "tools", "tool_choice", "thinking"}, "");
    else
        refuse_unknown_members(body, {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stop_sequences",
                                      "temperature", "top_p", "top_k", "thinking", "metadata", "stream"}, "");
    Json chat = {{"messages", chat_messages(body)}};
    if (const Json* tools = member(body, "tools")) chat["tools"] = chat_tools(*tools);
    if (const Json* choice = member(body, "tool_choice")) add_tool_choice(*choice, chat);
    chat["chat_template_kwargs"] = {{"thinking", thinking_enabled(body)}};
    if (count_tokens) return chat;

    if (!member(body, "max_tokens")) throw ApiError(400, "'max_tokens' is required", "missing_field");
    if (const Json* stops = member(body, "stop_sequences")) {
        if (!stops->is_array()) wrong_type("stop_sequences", "an array of strings");
        for (const Json& stop : *stops)
            if (!stop.is_string()) wrong_type("stop_sequences", "an array of strings");
        chat["stop"] = *stops;
    }
    // Anthropic uses metadata.user_id against abuse; k3 has no use for it.
    if (const Json* metadata = member(body, "metadata")) {
        if (!metadata->is_object()) wrong_type("metadata", "an object");
        refuse_unknown_members(*metadata, {"user_id"}, "metadata.");
    }
    // Validated by the chat path under the same names.
    for (const char* key : {"model", "max_tokens", "temperature", "top_p", "top_k", "stream"})
        if (const Json* value = member(body, key)) chat[key] = *value;
    return chat;
}

}  // namespace k3::server::anthropic
