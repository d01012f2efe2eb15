// Reading and validating API request bodies: every problem becomes an ApiError carrying the HTTP
// status and OpenAI's error type and code, with a message naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

// What a request leaves out, as `k3 serve --temp --top-p --top-k --min-p --seed -n` set it.
struct SamplingDefaults {
    std::optional<double> temperature;  // absent: the endpoint's own (OpenAI's 1, /completion's 0.8)
    double top_p = 1.0;
    double min_p = 0.0;
    int32_t top_k = 0;
    std::optional<uint64_t> seed;       // absent: a fresh random seed per request
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
};

// The body as a JSON object; 400 for malformed JSON or another type.
Json parse_body(const std::string& body);

// Also refuses (400, naming it) any member the endpoint does not support.
GenerationParams parse_generation_params(const Json& body, Endpoint endpoint, const SamplingDefaults& defaults = {});
ChatInput parse_chat_input(const Json& body);
// `field` names the member for messages; 400 if absent or of the wrong shape.
std::vector<PromptPiece> parse_prompt(const Json& body, const char* field);
std::vector<int32_t> parse_token_ids(const Json& body, const char* field);

// A fresh seed for requests that give none.
uint64_t random_seed();

}  // namespace k3::server
