// Reading and validating API request bodies: every problem becomes an ApiError carrying the HTTP
// status and OpenAI's error type and code, with a message naming the field.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/sampler.h"
#include "util/error.h"

namespace k3::server {

using Json = nlohmann::ordered_json;

struct ApiError : Error {
    ApiError(int status, const std::string& message, std::string code = "invalid_request",
             std::string type = "invalid_request_error")
        : Error(message), status(status), type(std::move(type)), code(std::move(code)) {}
    int status;
    std::string type, code;
};

enum class Endpoint { chat, completions, llama_completion };

// Fields shared by the three generation endpoints.
struct GenerationParams {
    runtime::SamplerParams sampling;
    std::optional<int64_t> max_tokens;  // absent: the rest of the context
    std::vector<std::string> stop;
    bool ignore_eos = false;            // llama.cpp's: generate past end-of-generation tokens
    bool stream = false;
    bool include_usage = false;         // stream_options.include_usage
    // Constrained output, unparsed: a GBNF grammar (`grammar`) or a JSON schema (llama-server's
    // `json_schema`, or `response_format` json_object / json_schema); at most one.
    std::optional<std::string> grammar;
    std::optional<Json> json_schema;
    bool cache_prompt = true;           // llama.cpp's: resume from the prompt cache
    int64_t n = 1;                      // choices from the one prompt (OpenAI's `n`)
};

// What a request leaves out, as `k3 serve --temp --top-p --top-k --min-p --seed -n` set it
// (runtime/sampler.h: the same defaults as `k3 run`).
struct SamplingDefaults : runtime::SamplingDefaults {
    std::optional<int64_t> max_tokens;  // absent: the rest of the context (applied, within the
                                        // context, by the API: see Api::generate)
};

// A prompt given as text, as token ids, or as a mix (llama.cpp's /completion).
using PromptPiece = std::variant<std::string, int32_t>;

struct ChatInput {
    Json messages;  // validated, roles normalised (developer -> system)
    Json tools;     // array or null
    Json template_extra = Json::object();  // tool_choice, response_format, chat_template_kwargs
    bool thinking = true;                  // what the template will be told (its default: true)
    bool tool_calls_forbidden = false;     // tool_choice "none"
    Json forced_tools = Json::array();     // tool_choice "required" (every tool) or a named one:
                                           // the answer must call one of these
    bool text_before_forced_call = true;   // false: the forced call is the whole answer (the agent
                                           // APIs)
};

// A member that is absent or null counts as not given (OpenAI's clients send nulls).
const Json* member(const Json& object, const char* key);
// 400: '`key`' must be `expected`.
[[noreturn]] void wrong_type(const std::string& key, const char* expected);
// "where[index]", naming an array element in messages.
std::string indexed(const std::string& where, size_t index);
// The string member `key` of `object` (named `where` in messages); 400 if absent or not a string.
const std::string& required_string(const Json& object, const char* key, const std::string& where);
// 400 naming the first member of `object` not in `known`; `where` prefixes its name ("tools[2].").
void refuse_unknown_members(const Json& object, const std::set<std::string_view>& known, const std::string& where);

// Flat tool declarations ({name, description, SCHEMA_KEY: schema}, as Anthropic's and the Responses
// API's are) as chat's [{"type": "function", "function": {name, description, parameters}}];
// `check` refuses (ApiError) what the API does not allow in tool `where` before it is read.
Json chat_function_tools(const Json& tools, const char* schema_key,
                         const std::function<void(const Json& tool, const std::string& where)>& check);

// Compact JSON text; invalid UTF-8 in strings is replaced, never thrown.
std::string dump_json(const Json& json);

// The body as a JSON object; 400 for malformed JSON or another type.
Json parse_body(const std::string& body);

// Also refuses (400, naming it) any member the endpoint does not support.
GenerationParams parse_generation_params(const Json& body, Endpoint endpoint, const SamplingDefaults& defaults = {});
ChatInput parse_chat_input(const Json& body);
// `field` names the member for messages; 400 if absent or of the wrong shape.
std::vector<PromptPiece> parse_prompt(const Json& body, const char* field);
std::vector<int32_t> parse_token_ids(const Json& body, const char* field);

}  // namespace k3::server
