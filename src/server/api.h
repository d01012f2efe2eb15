// The HTTP API of `k3 serve`: routing, authentication, request validation, prompt building
// (chat template, tokenizer) and metrics. Generation requests are handed to the scheduler and
// answered through a ResponseChannel; everything else is answered at once. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/scheduler.h"
#include "server/generation_sink.h"
#include "server/http_server.h"
#include "server/output_constraint.h"
#include "server/request_parsing.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace k3::runtime { class Engine; }

namespace k3::server {

class GenerationSink;

struct ApiOptions {
    std::string model_name;  // answered as "model" and listed by /v1/models
    std::string api_key;     // empty: no authentication
    std::optional<std::string> default_grammar;  // GBNF (--grammar-file) for unconstrained requests
    SamplingDefaults sampling_defaults;          // for fields a request leaves out
    std::string slot_save_path;  // folder for POST /slots/ID?action=save|restore; empty: off
    std::optional<std::string> chat_template;  // --chat-template-file's text; absent: the model's
    OutputOptions output;        // --special, --reasoning-format
    int64_t max_n = 16;          // most choices per request (`n`)
    std::string model_path;      // for /props
    std::string build_info;      // for /props, e.g. "k3 0.1.0"
};

class Api {
public:
    // Reads the chat template from the model (the bundled Kimi-K3 one if it has none) unless
    // options.chat_template gives one. Throws k3::Error, naming where it came from, for a
    // template that does not parse or cannot render a plain chat.
    Api(const runtime::Engine& engine, const text::Tokenizer& tokenizer, runtime::Scheduler& scheduler,
        ApiOptions options);

    Reply handle(const HttpRequest& request);

private:
    Reply route(const HttpRequest& request);
    Reply generate(const HttpRequest& request, Endpoint endpoint);
    // Anthropic's /v1/messages or OpenAI's /v1/responses, through the chat path.
    enum class AgentApi { anthropic_messages, openai_responses };
    Reply generate_answer(const HttpRequest& request, AgentApi api);
    // The checks and limits every generation passes, and the job they make.
    runtime::GenerationRequest prepare_job(GenerationParams& params, const ChatInput* chat,
                                           std::vector<int32_t> prompt) const;
    Reply submit(runtime::GenerationRequest job_request, const std::shared_ptr<GenerationSink>& sink,
                 const std::shared_ptr<ResponseChannel>& channel);
    std::string next_id();  // unique in this server's life, for response ids
    HttpResponse count_message_tokens(const HttpRequest& request) const;
    // The OpenAI endpoints' `n` choices, each its own job and sink, answered together.
    Reply submit_choices(Endpoint endpoint, const GenerationParams& params, const ChatInput* chat,
                         runtime::GenerationRequest job_request, const std::shared_ptr<ResponseChannel>& channel,
                         const ResponseIdentity& identity);
    std::vector<int32_t> encode_prompt(const std::vector<PromptPiece>& pieces) const;
    // What the chat template is given for the chat, with the generation prompt.
    Json template_variables(const ChatInput& input) const;
    // The chat rendered and tokenized; special-token text inside messages stays plain text.
    std::vector<int32_t> encode_chat(const ChatInput& input) const;
    HttpResponse tokenize(const HttpRequest& request) const;
    HttpResponse detokenize(const HttpRequest& request) const;
    HttpResponse models() const;
    HttpResponse props() const;
    // What the template does with tools, a system message, tool calls and thinking, found by
    // rendering it with and without each (llama-server's chat_template_caps).
    Json probe_template_caps() const;
    HttpResponse slots() const;
    HttpResponse slot_action(const HttpRequest& request);
    HttpResponse metrics() const;
    bool authorized(const HttpRequest& request) const;
    void count(const std::string& path, int status);

    const runtime::Engine& engine_;
    const text::Tokenizer& tokenizer_;
    runtime::Scheduler& scheduler_;
    ApiOptions options_;
    int64_t started_;  // unix seconds
    std::string template_source_;
    std::optional<text::ChatTemplate> template_;
    Json template_caps_;
    OutputConstraint output_constraint_;
    std::string bos_text_, eos_text_;

    mutable std::mutex metrics_mutex_;
    std::map<std::pair<std::string, int>, uint64_t> responses_;  // (path, status) -> count
    std::atomic<uint64_t> next_id_{1};
};

}  // namespace k3::server
