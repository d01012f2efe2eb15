#include "server/request_parsing.h"

#include <cmath>
#include <limits>
#include <random>

namespace k3::server {

namespace {

// A member that is absent or null counts as not given (OpenAI's clients send nulls).
const Json* member(const Json& body, const char* key) {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const char* key, const char* expected) {
    throw ApiError(400, std::string("'") + key + "' must be " + expected, "invalid_type");
}

std::optional<double> number_field(const Json& body, const char* key, double lo, double hi, const char* range) {
    const Json* value = member(body, key);
    if (!value) return std::nullopt;
    if (!value->is_number()) wrong_type(key, "a number");
    const double x = value->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw ApiError(400, std::string("'") + key + "' must be " + range, "invalid_value");
    return x;
}

std::optional<int64_t> integer_field(const Json& body, const char* key) {
    const Json* value = member(body, key);
    if (!value) return std::nullopt;
    if (!value->is_number_integer()) wrong_type(key, "an integer");
    if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        throw ApiError(400, std::string("'") + key + "' is out of range", "invalid_value");
    return value->get<int64_t>();
}

std::optional<bool> bool_field(const Json& body, const char* key) {
    const Json* value = member(body, key);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) wrong_type(key, "a boolean");
    return value->get<bool>();
}

int32_t token_id(const Json& value, const char* key) {
    if (!value.is_number_integer()) wrong_type(key, "an array of token ids (integers)");
    if (value.is_number_unsigned() ? value.get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max())
                                   : value.get<int64_t>() < 0)
        throw ApiError(400, std::string("'") + key + "' holds an invalid token id " + value.dump(), "invalid_value");
    return value.get<int32_t>();
}

void check_content(const Json& message, size_t index, bool may_be_empty) {
    const std::string where = "messages[" + std::to_string(index) + "]";
    const Json* content = member(message, "content");
    if (!content) {
        if (!may_be_empty) throw ApiError(400, where + " has no 'content'", "invalid_value");
        return;
    }
    if (content->is_string()) return;
    if (!content->is_array())
        throw ApiError(400, where + ".content must be a string or an array of parts", "invalid_type");
    for (const Json& part : *content) {
        const Json* type = part.is_object() ? member(part, "type") : nullptr;
        if (!type || *type != "text" || !part.contains("text") || !part["text"].is_string())
            throw ApiError(400, where + ".content: only parts {\"type\": \"text\", \"text\": string} are supported",
                           "invalid_value");
    }
}

}  // namespace

Json parse_body(const std::string& body) {
    Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) throw ApiError(400, "the request body is not valid JSON", "invalid_json");
    if (!json.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_json");
    return json;
}

uint64_t random_seed() {
    std::random_device device;
    return (uint64_t(device()) << 32) ^ device();
}

GenerationParams parse_generation_params(const Json& body, Endpoint endpoint) {
    GenerationParams params;
    runtime::SamplerParams& s = params.sampling;
    constexpr double kHuge = std::numeric_limits<double>::max();
    // llama.cpp's /completion samples at 0.8 by default; OpenAI's endpoints at 1.
    s.temperature = float(number_field(body, "temperature", 0.0, kHuge, "a number >= 0")
                              .value_or(endpoint == Endpoint::llama_completion ? 0.8 : 1.0));
    s.top_p = float(number_field(body, "top_p", 0.0, 1.0, "between 0 and 1").value_or(1.0));
    s.min_p = float(number_field(body, "min_p", 0.0, 1.0, "between 0 and 1").value_or(0.0));
    const std::optional<int64_t> top_k = integer_field(body, "top_k");
    if (top_k && *top_k < 0) throw ApiError(400, "'top_k' must be >= 0", "invalid_value");
    s.top_k = int32_t(std::min<int64_t>(top_k.value_or(0), std::numeric_limits<int32_t>::max()));
    const std::optional<int64_t> seed = integer_field(body, "seed");
    s.seed = seed && *seed != -1 ? uint64_t(*seed) : random_seed();  // -1: llama.cpp's "random"

    if (const std::optional<int64_t> n = integer_field(body, "n"); n && *n != 1)
        throw ApiError(400, "'n' must be 1 (one choice per request)", "invalid_value");
    for (const char* key : {"max_tokens", "max_completion_tokens", "n_predict"}) {
        const std::optional<int64_t> limit = integer_field(body, key);
        if (!limit) continue;
        if (std::string_view(key) == "n_predict" && *limit < 0) continue;  // -1: until the context is full
        if (*limit < 1) throw ApiError(400, std::string("'") + key + "' must be at least 1", "invalid_value");
        params.max_tokens = *limit;
    }
    if (const Json* stop = member(body, "stop")) {
        if (stop->is_string()) {
            params.stop.push_back(stop->get<std::string>());
        } else if (stop->is_array()) {
            for (const Json& item : *stop) {
                if (!item.is_string()) wrong_type("stop", "a string or an array of strings");
                params.stop.push_back(item.get<std::string>());
            }
        } else {
            wrong_type("stop", "a string or an array of strings");
        }
    }
    params.ignore_eos = bool_field(body, "ignore_eos").value_or(false);
    params.stream = bool_field(body, "stream").value_or(false);
    params.cache_prompt = bool_field(body, "cache_prompt").value_or(true);
    if (const Json* options = member(body, "stream_options")) {
        if (!options->is_object()) wrong_type("stream_options", "an object");
        params.include_usage = bool_field(*options, "include_usage").value_or(false);
    }
    return params;
}

ChatInput parse_chat_input(const Json& body) {
    ChatInput input;
    const Json* messages = member(body, "messages");
    if (!messages) throw ApiError(400, "'messages' is required", "missing_field");
    if (!messages->is_array()) wrong_type("messages", "an array");
    if (messages->empty()) throw ApiError(400, "'messages' must not be empty", "invalid_value");
    input.messages = Json::array();
    for (size_t i = 0; i < messages->size(); ++i) {
        Json message = (*messages)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!message.is_object()) throw ApiError(400, where + " must be an object", "invalid_type");
        const Json* role = member(message, "role");
        if (!role || !role->is_string()) throw ApiError(400, where + " needs a string 'role'", "invalid_value");
        std::string name = role->get<std::string>();
        if (name == "developer") message["role"] = name = "system";  // OpenAI's newer name for it
        if (name == "assistant") {
            const Json* calls = member(message, "tool_calls");
            if (calls && !calls->is_array()) throw ApiError(400, where + ".tool_calls must be an array", "invalid_type");
            check_content(message, i, calls && !calls->empty());
        } else if (name == "user" || name == "system" || name == "tool") {
            check_content(message, i, false);
        } else {
            throw ApiError(400, where + " has unknown role '" + name + "' (system, developer, user, assistant, tool)",
                           "invalid_value");
        }
        input.messages.push_back(std::move(message));
    }
    input.tools = nullptr;
    if (const Json* tools = member(body, "tools")) {
        if (!tools->is_array()) wrong_type("tools", "an array");
        for (const Json& tool : *tools)
            if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object() ||
                !tool["function"].contains("name") || !tool["function"]["name"].is_string())
                throw ApiError(400, "each of 'tools' must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                               "invalid_value");
        if (!tools->empty()) input.tools = *tools;
    }
    if (const Json* choice = member(body, "tool_choice")) {
        if (!choice->is_string() && !choice->is_object()) wrong_type("tool_choice", "a string or an object");
        input.template_extra["tool_choice"] = *choice;
    }
    if (const Json* format = member(body, "response_format")) {
        if (!format->is_object()) wrong_type("response_format", "an object");
        input.template_extra["response_format"] = *format;
    }
    if (const Json* kwargs = member(body, "chat_template_kwargs")) {
        if (!kwargs->is_object()) wrong_type("chat_template_kwargs", "an object");
        for (const auto& [key, value] : kwargs->items()) input.template_extra[key] = value;
    }
    if (auto it = input.template_extra.find("thinking"); it != input.template_extra.end() && !it->is_null())
        input.thinking = it->is_boolean() ? it->get<bool>() : true;
    return input;
}

std::vector<PromptPiece> parse_prompt(const Json& body, const char* field) {
    const Json* prompt = member(body, field);
    if (!prompt) throw ApiError(400, std::string("'") + field + "' is required", "missing_field");
    std::vector<PromptPiece> pieces;
    if (prompt->is_string()) {
        pieces.emplace_back(prompt->get<std::string>());
    } else if (prompt->is_array()) {
        // [ids...], [text], or llama.cpp's mix of both; a batch of several texts is not served.
        size_t n_texts = 0;
        for (const Json& item : *prompt) {
            if (item.is_string()) {
                pieces.emplace_back(item.get<std::string>());
                ++n_texts;
            } else {
                pieces.emplace_back(token_id(item, field));
            }
        }
        if (n_texts > 1 && n_texts == prompt->size())
            throw ApiError(400, std::string("'") + field + "': one prompt per request", "invalid_value");
    } else {
        wrong_type(field, "a string or an array of token ids");
    }
    if (pieces.empty()) throw ApiError(400, std::string("'") + field + "' is empty", "invalid_value");
    return pieces;
}

std::vector<int32_t> parse_token_ids(const Json& body, const char* field) {
    const Json* ids = member(body, field);
    if (!ids) throw ApiError(400, std::string("'") + field + "' is required", "missing_field");
    if (!ids->is_array()) wrong_type(field, "an array of token ids (integers)");
    std::vector<int32_t> tokens;
    for (const Json& item : *ids) tokens.push_back(token_id(item, field));
    return tokens;
}

}  // namespace k3::server
