#include "server/api.h"

#include <chrono>
#include <cstdio>

#include "gguf/gguf_file.h"
#include "runtime/engine.h"
#include "server/generation_sink.h"
#include "text/bundled_template.h"
#include "text/chat_prompt.h"

namespace k3::server {

namespace {

constexpr const char* kPaths[] = {"/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions",
                                  "/completion", "/tokenize", "/detokenize"};

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

HttpResponse json_response(const Json& body) { return HttpResponse{200, "application/json", dump(body), {}}; }

// Equal strings compare in a time that does not depend on where they first differ.
bool same_secret(const std::string& a, const std::string& b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= (unsigned char)(a[i] ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

}  // namespace

Api::Api(const runtime::Engine& engine, const text::Tokenizer& tokenizer, runtime::Scheduler& scheduler,
         ApiOptions options)
    : engine_(engine),
      tokenizer_(tokenizer),
      scheduler_(scheduler),
      options_(std::move(options)),
      started_(unix_now()),
      output_constraint_(tokenizer, options_.default_grammar) {
    std::optional<std::string> source = engine.file().get_string("tokenizer.chat_template");
    template_.emplace(source ? *source : std::string(text::bundled_kimi_k3_template()));
    const text::Vocabulary& vocab = tokenizer.vocabulary();
    if (vocab.bos_id) bos_text_ = std::string(tokenizer.token_bytes(*vocab.bos_id));
    if (vocab.eos_id) eos_text_ = std::string(tokenizer.token_bytes(*vocab.eos_id));
}

Reply Api::handle(const HttpRequest& request) {
    Reply reply;
    try {
        reply = route(request);
    } catch (const ApiError& e) {
        reply.response = error_response(e.status, e.what(), e.type, e.code);
    } catch (const jinja::BudgetExceeded& e) {
        reply.response = error_response(500, std::string("chat template: ") + e.what(), "server_error",
                                        "template_budget_exceeded");
    } catch (const jinja::TemplateError& e) {
        reply.response = error_response(400, "chat template: " + e.kind() + ": " + e.what(), "invalid_request_error",
                                        "template_error");
    } catch (const Error& e) {
        reply.response = error_response(400, e.what(), "invalid_request_error", "invalid_request");
    } catch (const std::exception& e) {
        reply.response = error_response(500, e.what(), "server_error", "internal_error");
    }
    count(request.path, reply.channel ? 200 : reply.response.status);
    return reply;
}

bool Api::authorized(const HttpRequest& request) const {
    return options_.api_key.empty() || same_secret(request.authorization, "Bearer " + options_.api_key);
}

Reply Api::route(const HttpRequest& request) {
    const std::string& path = request.path;
    auto expect = [&](const char* method) {
        if (request.method != method)
            throw ApiError(405, path + " accepts " + method + " only", "method_not_allowed");
    };
    if (path == "/health") {
        expect("GET");
        return {json_response({{"status", "ok"}}), nullptr};
    }
    if (!authorized(request)) {
        HttpResponse denied = error_response(401, "missing or wrong API key (Authorization: Bearer KEY)",
                                             "invalid_request_error", "invalid_api_key");
        denied.headers.emplace_back("WWW-Authenticate", "Bearer");
        return {denied, nullptr};
    }
    if (path == "/v1/chat/completions") return expect("POST"), generate(request, Endpoint::chat);
    if (path == "/v1/completions") return expect("POST"), generate(request, Endpoint::completions);
    if (path == "/completion") return expect("POST"), generate(request, Endpoint::llama_completion);
    if (path == "/v1/models") return expect("GET"), Reply{models(), nullptr};
    if (path == "/metrics") return expect("GET"), Reply{metrics(), nullptr};
    if (path == "/tokenize") return expect("POST"), Reply{tokenize(request), nullptr};
    if (path == "/detokenize") return expect("POST"), Reply{detokenize(request), nullptr};
    throw ApiError(404, "no such endpoint: " + path, "not_found");
}

std::vector<int32_t> Api::encode_chat(const ChatInput& input) const {
    return text::render_chat_prompt(*template_, tokenizer_,
                                    text::chat_variables(input.messages, input.tools, /*add_generation_prompt=*/true,
                                                         bos_text_, eos_text_, input.template_extra))
        .ids;
}

// Text pieces may carry control tokens (as llama.cpp's completion prompts do); ids pass as given.
std::vector<int32_t> Api::encode_prompt(const std::vector<PromptPiece>& pieces) const {
    std::vector<int32_t> ids;
    for (const PromptPiece& piece : pieces) {
        if (const auto* text = std::get_if<std::string>(&piece)) {
            const std::vector<int32_t> encoded = tokenizer_.encode(*text, /*parse_special=*/true);
            ids.insert(ids.end(), encoded.begin(), encoded.end());
        } else {
            ids.push_back(std::get<int32_t>(piece));
        }
    }
    return ids;
}

Reply Api::generate(const HttpRequest& request, Endpoint endpoint) {
    const Json body = parse_body(request.body);
    GenerationParams params = parse_generation_params(body, endpoint, options_.sampling_defaults);
    std::optional<ChatInput> chat;
    std::vector<int32_t> prompt;
    if (endpoint == Endpoint::chat) {
        chat = parse_chat_input(body);
        prompt = encode_chat(*chat);
    } else {
        prompt = encode_prompt(parse_prompt(body, "prompt"));
    }
    if (prompt.empty()) throw ApiError(400, "the prompt has no tokens", "invalid_value");
    for (int32_t id : prompt)
        if (id >= engine_.n_vocab())
            throw ApiError(400, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                    std::to_string(engine_.n_vocab()), "invalid_value");
    const int64_t n_prompt = int64_t(prompt.size()), n_ctx = scheduler_.ctx_size();
    if (n_prompt >= n_ctx)
        throw ApiError(400, "the prompt has " + std::to_string(n_prompt) + " tokens; the context holds " +
                                std::to_string(n_ctx) + " (room for at least one more is needed)",
                       "context_length_exceeded");
    if (!params.max_tokens && options_.sampling_defaults.max_tokens)  // -n: never beyond the context
        params.max_tokens = std::min(*options_.sampling_defaults.max_tokens, n_ctx - n_prompt);
    if (params.max_tokens && *params.max_tokens > n_ctx - n_prompt)
        throw ApiError(400, "max_tokens " + std::to_string(*params.max_tokens) + " exceeds the " +
                                std::to_string(n_ctx - n_prompt) + " tokens left in the context after the prompt (" +
                                std::to_string(n_prompt) + " tokens)",
                       "context_length_exceeded");

    for (const auto& [id, bias] : params.sampling.logit_bias)
        if (id >= engine_.n_vocab())
            throw ApiError(400, "'logit_bias' names token " + std::to_string(id) + ", outside the vocabulary of " +
                                    std::to_string(engine_.n_vocab()), "invalid_value");

    runtime::GenerationRequest job_request;
    job_request.prompt = std::move(prompt);
    job_request.params.sampling = params.sampling;
    if (auto grammar = output_constraint_.for_request(params, chat ? &*chat : nullptr)) {
        if (params.ignore_eos) throw ApiError(400, "'ignore_eos' cannot be combined with a grammar or schema", "invalid_value");
        job_request.params.sampling.grammar = std::move(grammar);
        job_request.params.sampling.vocabulary = output_constraint_.vocabulary();
    }
    job_request.params.max_tokens = params.max_tokens.value_or(-1);
    if (!params.ignore_eos) job_request.params.stop_ids = tokenizer_.end_of_generation_ids();

    auto channel = std::make_shared<ResponseChannel>();
    char id[32];
    std::snprintf(id, sizeof id, "%08llx", (unsigned long long)next_id_.fetch_add(1));
    const char* prefix = endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-";
    auto sink = std::make_shared<GenerationSink>(endpoint, tokenizer_, channel,
                                                 ResponseIdentity{prefix + std::string(id), options_.model_name, unix_now()},
                                                 params, chat ? &*chat : nullptr);
    // The stream head goes into the channel before the first token can; if the request is
    // refused below, the channel is dropped unseen.
    sink->begin();
    std::shared_ptr<runtime::GenerationJob> job = scheduler_.submit(std::move(job_request), sink);
    if (!job) {
        HttpResponse busy = error_response(503, "the server is busy (request queue full); retry later",
                                           "server_error", "server_busy");
        busy.headers.emplace_back("Retry-After", "1");
        return {busy, nullptr};
    }
    channel->on_client_gone([job] { job->cancel(); });
    return {{}, channel};
}

HttpResponse Api::tokenize(const HttpRequest& request) const {
    const Json body = parse_body(request.body);
    auto content = body.find("content");
    if (content == body.end() || !content->is_string())
        throw ApiError(400, "'content' must be a string", "invalid_type");
    bool parse_special = true;  // as llama.cpp's /tokenize
    if (auto it = body.find("parse_special"); it != body.end() && !it->is_null()) {
        if (!it->is_boolean()) throw ApiError(400, "'parse_special' must be a boolean", "invalid_type");
        parse_special = it->get<bool>();
    }
    return json_response({{"tokens", tokenizer_.encode(content->get<std::string>(), parse_special)}});
}

HttpResponse Api::detokenize(const HttpRequest& request) const {
    const std::vector<int32_t> ids = parse_token_ids(parse_body(request.body), "tokens");
    text::StreamingDetokenizer detokenizer(tokenizer_);
    std::string text;
    for (int32_t id : ids) {
        if (id >= tokenizer_.n_vocab())
            throw ApiError(400, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                    std::to_string(tokenizer_.n_vocab()), "invalid_value");
        text += detokenizer.push(id);
    }
    text += detokenizer.finish();
    return json_response({{"content", text}});
}

HttpResponse Api::models() const {
    Json model = {{"id", options_.model_name},
                  {"object", "model"},
                  {"created", started_},
                  {"owned_by", "k3"},
                  {"meta", {{"n_ctx", scheduler_.ctx_size()}, {"n_ctx_train", engine_.n_ctx_train()},
                            {"n_vocab", engine_.n_vocab()}, {"n_parallel", scheduler_.n_slots()}}}};
    return json_response({{"object", "list"}, {"data", Json::array({model})}});
}

void Api::count(const std::string& path, int status) {
    std::string label = "other";
    for (const char* known : kPaths)
        if (path == known) label = known;
    std::lock_guard lock(metrics_mutex_);
    ++responses_[{label, status}];
}

HttpResponse Api::metrics() const {
    const runtime::SchedulerStats stats = scheduler_.stats();
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, double value) {
        char line[64];
        std::snprintf(line, sizeof line, "%.17g", value);
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
               line + "\n";
    };
    out += "# HELP k3_http_responses_total HTTP responses by path and status (generations count when accepted).\n"
           "# TYPE k3_http_responses_total counter\n";
    {
        std::lock_guard lock(metrics_mutex_);
        for (const auto& [key, n] : responses_)
            out += "k3_http_responses_total{path=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
                   "\"} " + std::to_string(n) + "\n";
    }
    metric("k3_requests_finished_total", "counter", "Generation requests finished (any outcome).",
           double(stats.finished));
    metric("k3_prompt_tokens_total", "counter", "Prompt tokens fed to the model.", double(stats.prompt_tokens));
    metric("k3_generated_tokens_total", "counter", "Tokens generated.", double(stats.generated_tokens));
    metric("k3_queue_depth", "gauge", "Requests waiting for a slot.", double(stats.queued));
    metric("k3_active_sequences", "gauge", "Requests being generated.", double(stats.active));
    metric("k3_slots", "gauge", "Sequences decoded together at most (--parallel).", double(scheduler_.n_slots()));
    metric("k3_decode_seconds_total", "counter", "Time spent in forward passes.", stats.decode_seconds);
    const uint64_t tokens = stats.prompt_tokens + stats.generated_tokens;
    metric("k3_tokens_per_second", "gauge", "Tokens (prompt and generated) per second of forward passes.",
           stats.decode_seconds > 0 ? double(tokens) / stats.decode_seconds : 0.0);
    return HttpResponse{200, "text/plain; version=0.0.4", out, {}};
}

}  // namespace k3::server
