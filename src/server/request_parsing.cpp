#include "server/request_parsing.h"

#include <cmath>
#include <limits>
#include <set>
#include <string_view>

#include "text/bounded_json.h"

namespace k3::server {

const Json* member(const Json& body, const char* key) {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

void wrong_type(const std::string& key, const char* expected) {
    throw ApiError(400, "'" + key + "' must be " + expected, "invalid_type");
}

std::string indexed(const std::string& where, size_t index) { return where + "[" + std::to_string(index) + "]"; }

const std::string& required_string(const Json& object, const char* key, const std::string& where) {
    const Json* value = member(object, key);
    if (!value) throw ApiError(400, where + " needs '" + key + "'", "missing_field");
    if (!value->is_string()) wrong_type(where + "." + key, "a string");
    return value->get_ref<const std::string&>();
}

void refuse_unknown_members(const Json& object, const std::set<std::string_view>& known, const std::string& where) {
    for (const auto& [key, value] : object.items())
        if (!known.contains(key))
            throw ApiError(400, "'" + where + key + "' is not supported by k3 on this endpoint", "unsupported_field");
}

Json chat_function_tools(const Json& tools, const char* schema_key,
                         const std::function<void(const Json& tool, const std::string& where)>& check) {
    if (!tools.is_array()) wrong_type("tools", "an array");
    Json out = Json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string at = indexed("tools", i);
        if (!tools[i].is_object()) wrong_type(at, "an object");
        check(tools[i], at);
        Json function = {{"name", required_string(tools[i], "name", at)}};
        if (member(tools[i], "description")) function["description"] = required_string(tools[i], "description", at);
        if (const Json* schema = member(tools[i], schema_key)) function["parameters"] = *schema;
        out.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    return out;
}

namespace {


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

// Members each endpoint understands; any other is refused rather than silently ignored.
const std::set<std::string_view> kCommonFields = {
    "model", "temperature", "top_p", "min_p", "top_k", "seed", "n", "max_tokens", "stop", "stream",
    "stream_options", "presence_penalty", "frequency_penalty", "repeat_penalty", "repeat_last_n", "logit_bias",
    "grammar", "json_schema", "response_format", "user", "ignore_eos", "cache_prompt"};
const std::set<std::string_view> kChatFields = {
    "messages", "max_completion_tokens", "tools", "tool_choice", "parallel_tool_calls", "chat_template_kwargs",
    "reasoning_effort", "logprobs", "top_logprobs"};
const std::set<std::string_view> kCompletionsFields = {"prompt", "logprobs"};
const std::set<std::string_view> kLlamaCompletionFields = {"prompt", "n_predict", "n_probs"};

void refuse_unknown_fields(const Json& body, Endpoint endpoint) {
    const std::set<std::string_view>& own = endpoint == Endpoint::chat          ? kChatFields
                                            : endpoint == Endpoint::completions ? kCompletionsFields
                                                                                : kLlamaCompletionFields;
    std::set<std::string_view> known = kCommonFields;
    known.insert(own.begin(), own.end());
    refuse_unknown_members(body, known, "");
}

// OpenAI's {"ID": bias} or llama.cpp's [[ID, bias], ...], where a bias of false forbids.
std::vector<std::pair<int32_t, float>> parse_logit_bias(const Json& value) {
    std::vector<std::pair<int32_t, float>> biases;
    auto bias_of = [](const Json& bias, const std::string& where) {
        if (bias.is_boolean() && !bias.get<bool>()) return -std::numeric_limits<float>::infinity();
        if (!bias.is_number() || !std::isfinite(bias.get<double>()))
            throw ApiError(400, "'logit_bias' " + where + " must be a number (or false)", "invalid_value");
        return float(bias.get<double>());
    };
    auto id_of = [](const std::string& text) {
        size_t used = 0;
        long long id = -1;
        try {
            id = std::stoll(text, &used);
        } catch (const std::exception&) {
        }
        if (used != text.size() || id < 0 || id > std::numeric_limits<int32_t>::max())
            throw ApiError(400, "'logit_bias' key '" + text + "' is not a token id", "invalid_value");
        return int32_t(id);
    };
    if (value.is_object()) {
        for (const auto& [key, bias] : value.items()) biases.emplace_back(id_of(key), bias_of(bias, "for " + key));
    } else if (value.is_array()) {
        for (const Json& pair : value) {
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer())
                throw ApiError(400, "'logit_bias' as an array holds [token id, bias] pairs", "invalid_value");
            biases.emplace_back(token_id(pair[0], "logit_bias"), bias_of(pair[1], "for " + pair[0].dump()));
        }
    } else {
        wrong_type("logit_bias", "an object {\"token id\": bias} or an array of [id, bias]");
    }
    return biases;
}

// response_format: text (nothing), json_object (optionally with llama-server's "schema"),
// json_schema {"json_schema": {"schema": ...}}.
std::optional<Json> response_format_schema(const Json& format) {
    if (!format.is_object()) wrong_type("response_format", "an object");
    const Json* type = member(format, "type");
    if (!type || !type->is_string()) throw ApiError(400, "'response_format' needs a string 'type'", "invalid_value");
    if (*type == "text") return std::nullopt;
    if (*type == "json_object") {
        if (const Json* schema = member(format, "schema")) return *schema;
        return Json{{"type", "object"}};
    }
    if (*type == "json_schema") {
        const Json* spec = member(format, "json_schema");
        const Json* schema = spec && spec->is_object() ? member(*spec, "schema") : nullptr;
        if (!schema) throw ApiError(400, "'response_format' json_schema needs 'json_schema': {\"schema\": ...}", "invalid_value");
        return *schema;
    }
    throw ApiError(400, "'response_format' type '" + type->get<std::string>() + "' is not supported (text, json_object, json_schema)",
                   "invalid_value");
}

}  // namespace

std::string dump_json(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json parse_body(const std::string& body) {
    Json json;
    try {
        json = text::parse_bounded_json(body);
    } catch (const Error& e) {
        throw ApiError(400, std::string("the request body: ") + e.what(), "invalid_json");
    }
    if (!json.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_json");
    return json;
}

GenerationParams parse_generation_params(const Json& body, Endpoint endpoint, const SamplingDefaults& defaults) {
    refuse_unknown_fields(body, endpoint);
    GenerationParams params;
    runtime::SamplerParams& s = params.sampling;
    constexpr double kHuge = std::numeric_limits<double>::max();
    s.temperature = float(number_field(body, "temperature", 0.0, kHuge, "a number >= 0").value_or(defaults.temperature));
    s.top_p = float(number_field(body, "top_p", 0.0, 1.0, "between 0 and 1").value_or(defaults.top_p));
    s.min_p = float(number_field(body, "min_p", 0.0, 1.0, "between 0 and 1").value_or(defaults.min_p));
    const std::optional<int64_t> top_k = integer_field(body, "top_k");
    if (top_k && *top_k < 0) throw ApiError(400, "'top_k' must be >= 0", "invalid_value");
    s.top_k = top_k ? int32_t(std::min<int64_t>(*top_k, std::numeric_limits<int32_t>::max())) : defaults.top_k;
    const std::optional<int64_t> seed = integer_field(body, "seed");
    // -1: llama.cpp's "random"
    const int64_t chosen = seed.value_or(defaults.seed);
    s.seed = chosen == -1 ? runtime::random_seed() : uint64_t(chosen);

    if (const std::optional<int64_t> n = integer_field(body, "n")) {
        if (*n < 1) throw ApiError(400, "'n' must be at least 1", "invalid_value");
        if (*n > 1 && endpoint == Endpoint::llama_completion)
            throw ApiError(400, "'n' > 1 is for /v1/chat/completions and /v1/completions; /completion gives one answer",
                           "invalid_value");
        params.n = *n;
    }
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
    s.presence_penalty = float(number_field(body, "presence_penalty", -2.0, 2.0, "between -2 and 2").value_or(0.0));
    s.frequency_penalty = float(number_field(body, "frequency_penalty", -2.0, 2.0, "between -2 and 2").value_or(0.0));
    s.repeat_penalty = float(number_field(body, "repeat_penalty", 0.0, kHuge, "a number > 0").value_or(1.0));
    if (s.repeat_penalty <= 0.0f) throw ApiError(400, "'repeat_penalty' must be a number > 0", "invalid_value");
    if (const std::optional<int64_t> n = integer_field(body, "repeat_last_n")) {
        if (*n < -1 || *n > std::numeric_limits<int32_t>::max())
            throw ApiError(400, "'repeat_last_n' must be -1 (all), 0 (off) or a number of tokens", "invalid_value");
        s.repeat_last_n = int32_t(*n);
    }
    if (const Json* bias = member(body, "logit_bias")) s.logit_bias = parse_logit_bias(*bias);
    // logprobs: chat's is a boolean with top_logprobs beside it, completions' the number of
    // alternatives, llama.cpp's n_probs the same.
    if (endpoint == Endpoint::chat) {
        s.logprobs = bool_field(body, "logprobs").value_or(false);
        if (const std::optional<int64_t> top = integer_field(body, "top_logprobs")) {
            if (*top < 0 || *top > 20) throw ApiError(400, "'top_logprobs' must be between 0 and 20", "invalid_value");
            if (!s.logprobs) throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "invalid_value");
            s.top_logprobs = int32_t(*top);
        }
    } else {
        const char* key = endpoint == Endpoint::completions ? "logprobs" : "n_probs";
        if (const std::optional<int64_t> n = integer_field(body, key)) {
            if (*n < 0 || *n > 20) throw ApiError(400, std::string("'") + key + "' must be between 0 and 20", "invalid_value");
            s.logprobs = endpoint == Endpoint::completions || *n > 0;
            s.top_logprobs = int32_t(*n);
        }
    }
    int constraints = 0;
    if (const Json* grammar = member(body, "grammar")) {
        if (!grammar->is_string()) wrong_type("grammar", "a string (GBNF)");
        params.grammar = grammar->get<std::string>();
        ++constraints;
    }
    if (const Json* schema = member(body, "json_schema")) {
        params.json_schema = *schema;
        ++constraints;
    }
    if (const Json* format = member(body, "response_format")) {
        if (std::optional<Json> schema = response_format_schema(*format)) {
            params.json_schema = std::move(*schema);
            ++constraints;
        }
    }
    if (constraints > 1)
        throw ApiError(400, "give at most one of 'grammar', 'json_schema' and a JSON 'response_format'", "invalid_value");

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
        if (choice->is_object()) {
            const Json* function = member(*choice, "function");
            const Json* name = function && function->is_object() ? member(*function, "name") : nullptr;
            if (!name || !name->is_string())
                throw ApiError(400, "'tool_choice' as an object is {\"type\": \"function\", \"function\": {\"name\": ...}}",
                               "invalid_value");
            bool declared = false;
            for (const Json& tool : input.tools.is_array() ? input.tools : Json::array())
                declared |= tool["function"]["name"] == *name;
            if (!declared)
                throw ApiError(400, "'tool_choice' names function '" + name->get<std::string>() + "', which 'tools' does not declare",
                               "invalid_value");
            for (const Json& tool : input.tools)
                if (tool["function"]["name"] == *name) input.forced_tools.push_back(tool);
            // The template knows "required" (a named function is enforced by the grammar alone).
            input.template_extra["tool_choice"] = "required";
        } else {
            if (!choice->is_string()) wrong_type("tool_choice", "a string or an object");
            if (*choice != "auto" && *choice != "none" && *choice != "required")
                throw ApiError(400, "'tool_choice' must be \"auto\", \"none\", \"required\" or a function", "invalid_value");
            if (*choice == "required") {
                if (!input.tools.is_array()) throw ApiError(400, "'tool_choice': \"required\" needs 'tools'", "invalid_value");
                input.forced_tools = input.tools;
            }
            input.tool_calls_forbidden = *choice == "none";
            input.template_extra["tool_choice"] = *choice;
        }
    }
    if (const Json* parallel = member(body, "parallel_tool_calls"); parallel && !parallel->is_boolean())
        wrong_type("parallel_tool_calls", "a boolean");
    if (const Json* format = member(body, "response_format")) {
        if (!format->is_object()) wrong_type("response_format", "an object");
        input.template_extra["response_format"] = *format;
    }
    // OpenAI's reasoning_effort onto the K3 template's thinking_effort (low, high, max).
    if (const Json* effort = member(body, "reasoning_effort")) {
        static const std::pair<std::string_view, std::string_view> kEfforts[] = {
            {"minimal", "low"}, {"low", "low"}, {"medium", "high"}, {"high", "max"}, {"max", "max"}};
        const std::string value = effort->is_string() ? effort->get<std::string>() : "";
        bool known = false;
        for (const auto& [openai, k3] : kEfforts)
            if (value == openai) {
                input.template_extra["thinking_effort"] = std::string(k3);
                known = true;
            }
        if (value == "none") {
            input.template_extra["thinking"] = false;
            known = true;
        }
        if (!known)
            throw ApiError(400, "'reasoning_effort' must be one of none, minimal, low, medium, high, max", "invalid_value");
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
