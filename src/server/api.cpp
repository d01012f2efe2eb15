#include "server/api.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "runtime/engine.h"
#include "server/anthropic_api.h"
#include "server/chat_page.h"
#include "server/choice_group.h"
#include "server/generation_sink.h"
#include "server/responses_api.h"
#include "text/bundled_template.h"
#include "text/chat_prompt.h"

namespace k3::server {

namespace {

constexpr const char* kPaths[] = {"/", "/props", "/health", "/metrics", "/v1/models", "/v1/chat/completions",
                                  "/v1/completions", "/completion", "/tokenize", "/detokenize", "/slots",
                                  "/v1/messages", "/v1/messages/count_tokens", "/v1/responses"};

// A request the scheduler's queue has no room for.
HttpResponse busy_response() {
    HttpResponse busy = error_response(503, "the server is busy (request queue full); retry later", "server_error",
                                       "server_busy");
    busy.headers.emplace_back("Retry-After", "1");
    return busy;
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

HttpResponse json_response(const Json& body) { return HttpResponse{200, "application/json", dump_json(body), {}}; }

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
    const std::optional<std::string> gguf_source = engine.info().chat_template;
    const char* origin = options_.chat_template ? "--chat-template-file"
                         : gguf_source          ? "the model's chat template (tokenizer.chat_template)"
                                                : "the bundled Kimi-K3 chat template";
    template_source_ = options_.chat_template ? *options_.chat_template
                       : gguf_source          ? *gguf_source
                                              : std::string(text::bundled_kimi_k3_template());
    const text::Vocabulary& vocab = tokenizer.vocabulary();
    if (vocab.bos_id) bos_text_ = std::string(tokenizer.token_bytes(*vocab.bos_id));
    if (vocab.eos_id) eos_text_ = std::string(tokenizer.token_bytes(*vocab.eos_id));
    // A template that cannot render a plain chat would fail every request: one given with
    // --chat-template-file is refused now; the model's own, if it parses, is kept with a warning
    // (each request then gets the template's error) and no capabilities.
    try {
        template_.emplace(template_source_);
        encode_chat({.messages = Json::array({{{"role", "user"}, {"content", "Hello"}}}), .tools = nullptr});
        template_caps_ = probe_template_caps();
    } catch (const text::TemplateError& e) {  // a runaway template's budget error included
        const std::string problem = std::string(origin) + ": " + e.kind() + ": " + e.what();
        if (options_.chat_template || !template_) throw Error(problem);
        std::fprintf(stderr, "k3 serve: warning: %s\n", problem.c_str());
        template_caps_ = Json::object();
    }
}

Reply Api::handle(const HttpRequest& request) {
    Reply reply;
    try {
        reply = route(request);
    } catch (const ApiError& e) {
        reply.response = error_response(e.status, e.what(), e.type, e.code);
    } catch (const text::TemplateBudgetExceeded& e) {
        reply.response = error_response(500, std::string("chat template: ") + e.what(), "server_error",
                                        "template_budget_exceeded");
    } catch (const text::TemplateError& e) {
        reply.response = error_response(400, "chat template: " + e.kind() + ": " + e.what(), "invalid_request_error",
                                        "template_error");
    } catch (const Error& e) {
        reply.response = error_response(400, e.what(), "invalid_request_error", "invalid_request");
    } catch (const std::exception& e) {
        reply.response = error_response(500, e.what(), "server_error", "internal_error");
    }
    // Anthropic's clients read errors in Anthropic's shape.
    if (request.path.starts_with("/v1/messages") && !reply.channel && reply.response.status >= 400)
        reply.response = anthropic::reshape_error(reply.response);
    count(request.path, reply.channel ? 200 : reply.response.status);
    return reply;
}

bool Api::authorized(const HttpRequest& request) const {
    // Anthropic's clients send the key as x-api-key.
    return options_.api_key.empty() || same_secret(request.authorization, "Bearer " + options_.api_key) ||
           same_secret(request.api_key, options_.api_key);
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
    if (path == "/") {  // the chat page holds no secret: it asks for the key itself
        expect("GET");
        return {HttpResponse{200, "text/html; charset=utf-8", std::string(chat_page_html()), {}}, nullptr};
    }
    if (!authorized(request)) {
        HttpResponse denied = error_response(401, "missing or wrong API key (Authorization: Bearer KEY, or x-api-key: KEY)",
                                             "invalid_request_error", "invalid_api_key");
        denied.headers.emplace_back("WWW-Authenticate", "Bearer");
        return {denied, nullptr};
    }
    if (path == "/v1/chat/completions") return expect("POST"), generate(request, Endpoint::chat);
    if (path == "/v1/completions") return expect("POST"), generate(request, Endpoint::completions);
    if (path == "/completion") return expect("POST"), generate(request, Endpoint::llama_completion);
    if (path == "/v1/messages") return expect("POST"), generate_answer(request, AgentApi::anthropic_messages);
    if (path == "/v1/messages/count_tokens") return expect("POST"), Reply{count_message_tokens(request), nullptr};
    if (path == "/v1/responses") return expect("POST"), generate_answer(request, AgentApi::openai_responses);
    if (path == "/v1/models") return expect("GET"), Reply{models(), nullptr};
    if (path == "/props") return expect("GET"), Reply{props(), nullptr};
    if (path == "/metrics") return expect("GET"), Reply{metrics(), nullptr};
    if (path == "/tokenize") return expect("POST"), Reply{tokenize(request), nullptr};
    if (path == "/detokenize") return expect("POST"), Reply{detokenize(request), nullptr};
    if (path == "/slots") return expect("GET"), Reply{slots(), nullptr};
    if (path.starts_with("/slots/")) return expect("POST"), Reply{slot_action(request), nullptr};
    throw ApiError(404, "no such endpoint: " + path, "not_found");
}

Json Api::template_variables(const ChatInput& input) const {
    return text::chat_variables(input.messages, input.tools, /*add_generation_prompt=*/true, bos_text_, eos_text_,
                                input.template_extra);
}

std::vector<int32_t> Api::encode_chat(const ChatInput& input) const {
    return text::render_chat_prompt(*template_, tokenizer_, template_variables(input)).ids;
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
    if (params.n > options_.max_n)
        throw ApiError(400, "'n' is " + std::to_string(params.n) + "; this server gives at most " +
                                std::to_string(options_.max_n) + " choices per request (--max-n)",
                       "invalid_value");
    std::optional<ChatInput> chat;
    std::vector<int32_t> prompt;
    if (endpoint == Endpoint::chat) {
        chat = parse_chat_input(body);
        prompt = encode_chat(*chat);
    } else {
        prompt = encode_prompt(parse_prompt(body, "prompt"));
    }
    runtime::GenerationRequest job_request = prepare_job(params, chat ? &*chat : nullptr, std::move(prompt));
    auto channel = std::make_shared<ResponseChannel>();
    const char* prefix = endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-";
    const ResponseIdentity identity{prefix + next_id(), options_.model_name, unix_now()};
    if (endpoint == Endpoint::llama_completion)
        return submit(std::move(job_request),
                      std::make_shared<GenerationSink>(endpoint, tokenizer_, channel, identity, params, nullptr,
                                                       options_.output),
                      channel);
    return submit_choices(endpoint, params, chat ? &*chat : nullptr, std::move(job_request), channel, identity);
}

Reply Api::generate_answer(const HttpRequest& request, AgentApi api) {
    const Json body = parse_body(request.body);
    const bool anthropic = api == AgentApi::anthropic_messages;
    std::optional<responses::Translation> translation;
    if (!anthropic) translation = responses::chat_request(body);
    const Json chat_body = anthropic ? anthropic::chat_request(body, /*count_tokens=*/false) : translation->chat;
    GenerationParams params = parse_generation_params(chat_body, Endpoint::chat, options_.sampling_defaults);
    ChatInput chat = parse_chat_input(chat_body);
    // Forced tool use answers with the call alone, as the agent APIs' own servers do (Anthropic
    // prefills the call; a Responses answer under "required" is its function calls).
    chat.text_before_forced_call = false;
    runtime::GenerationRequest job_request = prepare_job(params, &chat, encode_chat(chat));
    auto channel = std::make_shared<ResponseChannel>();
    std::unique_ptr<AnswerFormat> format;
    if (anthropic)
        format = std::make_unique<anthropic::MessageFormat>(channel, params.stream, "msg_" + next_id(),
                                                            options_.model_name, int64_t(job_request.prompt.size()));
    else
        format = std::make_unique<responses::ResponseFormat>(channel, params.stream, "resp_" + next_id(),
                                                             options_.model_name, unix_now(), translation->echo);
    return submit(std::move(job_request), std::make_shared<GenerationSink>(tokenizer_, std::move(format), params, chat, options_.output),
                  channel);
}

HttpResponse Api::count_message_tokens(const HttpRequest& request) const {
    const ChatInput chat = parse_chat_input(anthropic::chat_request(parse_body(request.body), /*count_tokens=*/true));
    return json_response({{"input_tokens", encode_chat(chat).size()}});
}

std::string Api::next_id() {
    char id[32];
    std::snprintf(id, sizeof id, "%08llx", (unsigned long long)next_id_.fetch_add(1));
    return id;
}

runtime::GenerationRequest Api::prepare_job(GenerationParams& params, const ChatInput* chat,
                                            std::vector<int32_t> prompt) const {
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
    if (chat) job_request.boundaries = text::message_boundaries(*template_, tokenizer_, template_variables(*chat), prompt);
    job_request.cache_prompt = params.cache_prompt;
    job_request.prompt = std::move(prompt);
    job_request.params.sampling = params.sampling;
    if (auto grammar = output_constraint_.for_request(params, chat)) {
        if (params.ignore_eos) throw ApiError(400, "'ignore_eos' cannot be combined with a grammar or schema", "invalid_value");
        job_request.params.sampling.grammar = std::move(grammar);
        job_request.params.sampling.vocabulary = output_constraint_.vocabulary();
    }
    job_request.params.max_tokens = params.max_tokens.value_or(-1);
    if (!params.ignore_eos) job_request.params.stop_ids = tokenizer_.end_of_generation_ids();
    return job_request;
}

Reply Api::submit(runtime::GenerationRequest job_request, const std::shared_ptr<GenerationSink>& sink,
                  const std::shared_ptr<ResponseChannel>& channel) {
    // The stream head goes into the channel before the first token can; if the request is
    // refused below, the channel is dropped unseen.
    sink->begin();
    std::shared_ptr<runtime::GenerationJob> job = scheduler_.submit(std::move(job_request), sink);
    if (!job) return {busy_response(), nullptr};
    channel->on_client_gone([job] { job->cancel(); });
    return {{}, channel};
}

// The OpenAI endpoints: `n` choices, each its own job and sink, answered together by a ChoiceGroup.
Reply Api::submit_choices(Endpoint endpoint, const GenerationParams& params, const ChatInput* chat,
                          runtime::GenerationRequest job_request, const std::shared_ptr<ResponseChannel>& channel,
                          const ResponseIdentity& identity) {
    const char* object = endpoint == Endpoint::completions ? "text_completion"
                         : params.stream                   ? "chat.completion.chunk"
                                                           : "chat.completion";
    auto group = std::make_shared<ChoiceGroup>(
        size_t(params.n), channel,
        Json{{"id", identity.id}, {"object", object}, {"created", identity.created}, {"model", identity.model}},
        params.stream, params.include_usage);
    std::vector<std::shared_ptr<GenerationSink>> sinks;
    for (size_t choice = 0; choice < size_t(params.n); ++choice) {
        sinks.push_back(std::make_shared<GenerationSink>(endpoint, tokenizer_, channel, identity, params, chat,
                                                         options_.output, group, choice));
        sinks.back()->begin();
    }
    if (params.n > 1) {
        // Choice i samples with its own seed derived from the request's, so `seed` reproduces all.
        group->set_launcher([this, group = std::weak_ptr<ChoiceGroup>(group), sinks, request = job_request] {
            const auto owner = group.lock();
            if (!owner) return;
            for (size_t choice = 1; choice < sinks.size(); ++choice) {
                runtime::GenerationRequest copy = request;
                copy.params.sampling.seed = request.params.sampling.seed ^ (0x9E3779B97F4A7C15ull * choice);
                runtime::GenerationSummary refused;
                refused.outcome = runtime::JobOutcome::error;
                refused.error = "the server is busy (request queue full)";
                std::shared_ptr<runtime::GenerationJob> job;
                try {
                    job = scheduler_.submit(std::move(copy), sinks[choice]);
                } catch (const std::exception& e) {  // every choice must end, or the answer never comes
                    refused.error = e.what();
                }
                if (job) owner->add_job(std::move(job));
                else sinks[choice]->on_finish(refused);
            }
        });
    }
    std::shared_ptr<runtime::GenerationJob> job = scheduler_.submit(std::move(job_request), sinks.front());
    if (!job) {
        group->cancel_all();  // drops the launcher, and with it the other sinks
        return {busy_response(), nullptr};
    }
    group->add_job(std::move(job));
    channel->on_client_gone([group = std::weak_ptr<ChoiceGroup>(group)] {
        if (const auto owner = group.lock()) owner->cancel_all();
    });
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

HttpResponse Api::slots() const {
    Json list = Json::array();
    for (const runtime::SlotInfo& slot : scheduler_.slots())
        list.push_back({{"id", slot.id},
                        {"n_ctx", scheduler_.ctx_size()},
                        {"speculative", false},
                        {"is_processing", slot.processing},
                        {"n_prompt_tokens", slot.n_tokens}});
    return json_response(list);
}

// POST /slots/ID?action=save|restore|erase, {"filename": NAME} for save and restore: a plain
// file name inside --slot-save-path (llama-server's rules).
HttpResponse Api::slot_action(const HttpRequest& request) {
    const std::string id_text = request.path.substr(std::string_view("/slots/").size());
    int id = -1;
    const auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (ec != std::errc() || end != id_text.data() + id_text.size() || id < 0 || id >= scheduler_.n_slots())
        throw ApiError(400, "slot id '" + id_text + "' is out of range (0.." + std::to_string(scheduler_.n_slots() - 1) + ")",
                       "invalid_value");
    const std::string action = request.query.starts_with("action=") ? request.query.substr(7) : std::string();
    try {
        if (action == "erase") return json_response({{"id_slot", id}, {"n_erased", scheduler_.erase_slot(id)}});
        if (action != "save" && action != "restore")
            throw ApiError(400, "action must be save, restore or erase (?action=...)", "invalid_value");
        if (options_.slot_save_path.empty())
            throw ApiError(501, "slot files are off: start the server with --slot-save-path DIR", "not_supported");
        const Json body = parse_body(request.body);
        const auto filename = body.find("filename");
        if (filename == body.end() || !filename->is_string())
            throw ApiError(400, "'filename' must be a string", "invalid_type");
        const std::string name = filename->get<std::string>();
        // One plain name: no separators, no "." or "..", nothing that leaves the folder.
        if (name.empty() || name == "." || name == ".." || name.find_first_of("/\\") != std::string::npos ||
            name.find('\0') != std::string::npos)
            throw ApiError(400, "filename '" + name + "' must be a plain file name inside --slot-save-path",
                           "invalid_value");
        const std::string path = (std::filesystem::path(options_.slot_save_path) / name).string();
        if (action == "save") {
            const runtime::SlotFileResult saved = scheduler_.save_slot(id, path);
            return json_response({{"id_slot", id}, {"filename", name}, {"n_saved", saved.n_tokens},
                                  {"n_written", saved.n_bytes}, {"timings", {{"save_ms", saved.ms}}}});
        }
        if (!std::filesystem::is_regular_file(path))
            throw ApiError(404, "no slot file '" + name + "' in --slot-save-path", "not_found");
        const runtime::SlotFileResult restored = scheduler_.restore_slot(id, path);
        return json_response({{"id_slot", id}, {"filename", name}, {"n_restored", restored.n_tokens},
                              {"n_read", restored.n_bytes}, {"timings", {{"restore_ms", restored.ms}}}});
    } catch (const ApiError&) {
        throw;
    } catch (const Error& e) {  // a busy slot, an unwritable path, a foreign or corrupt file
        std::fprintf(stderr, "k3 serve: warning: slot %d %s: %s\n", id, action.c_str(), e.what());
        throw ApiError(400, e.what(), "invalid_value");
    }
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

// llama-server's /props, as far as it applies.
HttpResponse Api::props() const {
    const SamplingDefaults& d = options_.sampling_defaults;
    const Json params = {
        {"temperature", d.temperature},  // every endpoint's (runtime::SamplingDefaults)
        {"top_p", d.top_p},
        {"top_k", d.top_k},
        {"min_p", d.min_p},
        {"seed", d.seed},                          // -1: a random one per request
        {"n_predict", d.max_tokens.value_or(-1)},  // -1: the rest of the context
        {"n_max", options_.max_n},
        {"special", options_.output.special},
        {"reasoning_format", options_.output.reasoning == ReasoningFormat::none ? "none" : "auto"},
        {"grammar", options_.default_grammar.value_or("")}};
    return json_response({{"default_generation_settings", {{"n_ctx", scheduler_.ctx_size()}, {"params", params}}},
                          {"total_slots", scheduler_.n_slots()},
                          {"model_alias", options_.model_name},
                          {"model_path", options_.model_path},
                          {"n_ctx", scheduler_.ctx_size()},
                          {"n_ctx_train", engine_.n_ctx_train()},
                          {"n_vocab", engine_.n_vocab()},
                          {"modalities", {{"vision", false}, {"audio", false}}},
                          {"chat_template", template_source_},
                          {"chat_template_caps", template_caps_},
                          {"bos_token", bos_text_},
                          {"eos_token", eos_text_},
                          {"build_info", options_.build_info}});
}

Json Api::probe_template_caps() const {
    const Json user = {{"role", "user"}, {"content", "Hello"}};
    auto render = [&](const Json& messages, const Json& tools, const Json& extra) {
        try {
            return template_->render(text::chat_variables(messages, tools, /*add_generation_prompt=*/true, bos_text_,
                                                          eos_text_, extra));
        } catch (const std::exception&) {  // a template that refuses a feature lacks it
            return std::string();
        }
    };
    const std::string plain = render(Json::array({user}), nullptr, Json::object());
    const Json tool = {{"type", "function"},
                       {"function", {{"name", "probe_tool_name"}, {"description", "probe"},
                                     {"parameters", {{"type", "object"}, {"properties", Json::object()}}}}}};
    const Json call = {{"role", "assistant"},
                       {"content", ""},
                       {"tool_calls", Json::array({{{"id", "call_0"}, {"type", "function"},
                                                    {"function", {{"name", "probe_call_name"}, {"arguments", "{}"}}}}})}};
    const Json system = {{"role", "system"}, {"content", "probe system text"}};
    return {{"tools", render(Json::array({user}), Json::array({tool}), Json::object()).find("probe_tool_name") !=
                          std::string::npos},
            {"tool_calls", render(Json::array({user, call, {{"role", "tool"}, {"tool_call_id", "call_0"},
                                                            {"content", "42"}}}),
                                  nullptr, Json::object())
                                   .find("probe_call_name") != std::string::npos},
            {"system_role", render(Json::array({system, user}), nullptr, Json::object()).find("probe system text") !=
                                std::string::npos},
            {"reasoning", render(Json::array({user}), nullptr, {{"thinking", false}}) != plain}};
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
    metric("k3_prompt_tokens_cached_total", "counter", "Prompt tokens resumed from the prompt cache.",
           double(stats.cached_prompt_tokens));
    const runtime::PrefixCacheStats cache = scheduler_.cache().stats();
    metric("k3_prompt_cache_bytes", "gauge", "Memory held by the prompt cache (--cache-ram).", double(cache.bytes));
    metric("k3_prompt_cache_entries", "gauge", "States in the prompt cache's memory.", double(cache.entries));
    metric("k3_prompt_cache_evictions_total", "counter", "States evicted from the prompt cache's memory.",
           double(cache.evictions));
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
