#include "server/generation_sink.h"

#include "server/http_server.h"

namespace k3::server {

namespace {

std::string dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

text::AnswerOptions answer_options(const GenerationParams& params, const ChatInput* chat) {
    text::AnswerOptions options;
    options.stop_strings = params.stop;
    if (chat) {
        options.chat = chat->thinking ? text::OutputStart::Think : text::OutputStart::Response;
        options.tools = nlohmann::json::parse(chat->tools.dump());
    }
    return options;
}

}  // namespace

GenerationSink::GenerationSink(Endpoint endpoint, const text::Tokenizer& tokenizer,
                               std::shared_ptr<ResponseChannel> channel, ResponseIdentity identity,
                               const GenerationParams& params, const ChatInput* chat)
    : endpoint_(endpoint),
      channel_(std::move(channel)),
      identity_(std::move(identity)),
      stream_(params.stream),
      include_usage_(params.include_usage),
      answer_(tokenizer, answer_options(params, chat)),
      tokenizer_(tokenizer),
      want_logprobs_(params.sampling.logprobs) {}

void GenerationSink::begin() {
    if (!stream_) return;
    channel_->start_stream("text/event-stream");
    if (endpoint_ == Endpoint::chat) send_event(chat_chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
}

void GenerationSink::send_event(const Json& event) {
    if (!want_logprobs_) return channel_->send("data: " + dump(event) + "\n\n");
    Json with_logprobs = event;
    attach_logprobs(with_logprobs);
    channel_->send("data: " + dump(with_logprobs) + "\n\n");
}

void GenerationSink::attach_logprobs(Json& event) {
    if (!want_logprobs_ || logprobs_streamed_ == sampled_.size()) return;
    if (endpoint_ == Endpoint::llama_completion) {
        event["completion_probabilities"] = logprobs(logprobs_streamed_);
    } else {
        if (!event.contains("choices") || event["choices"].empty()) return;
        event["choices"][0]["logprobs"] = logprobs(logprobs_streamed_);
    }
    logprobs_streamed_ = sampled_.size();
}

Json GenerationSink::logprobs(size_t from) const {
    auto token_text = [&](int32_t id) { return std::string(tokenizer_.token_bytes(id)); };
    auto bytes = [](const std::string& text) {
        Json list = Json::array();
        for (char c : text) list.push_back(int(uint8_t(c)));
        return list;
    };
    if (endpoint_ == Endpoint::completions) {
        Json out = {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
                    {"text_offset", Json::array()}};
        size_t offset = 0;
        for (size_t i = 0; i < sampled_.size(); ++i) {
            const std::string text = token_text(sampled_[i].id);
            if (i >= from) {
                out["tokens"].push_back(text);
                out["token_logprobs"].push_back(*sampled_[i].logprob);
                Json top = Json::object();
                for (const runtime::TokenLogprob& alt : sampled_[i].top) top[token_text(alt.id)] = alt.logprob;
                out["top_logprobs"].push_back(std::move(top));
                out["text_offset"].push_back(offset);
            }
            offset += text.size();
        }
        return out;
    }
    const bool llama = endpoint_ == Endpoint::llama_completion;
    auto entry = [&](int32_t id, float logprob) {
        const std::string text = token_text(id);
        Json e = Json::object();
        if (llama) e["id"] = id;
        e["token"] = text;
        e["logprob"] = logprob;
        e["bytes"] = bytes(text);
        return e;
    };
    Json content = Json::array();
    for (size_t i = from; i < sampled_.size(); ++i) {
        Json e = entry(sampled_[i].id, *sampled_[i].logprob);
        e["top_logprobs"] = Json::array();
        for (const runtime::TokenLogprob& alt : sampled_[i].top) e["top_logprobs"].push_back(entry(alt.id, alt.logprob));
        content.push_back(std::move(e));
    }
    if (llama) return content;
    return {{"content", std::move(content)}, {"refusal", nullptr}};
}

Json GenerationSink::chat_chunk(Json delta, const Json& finish_reason) const {
    return {{"id", identity_.id},
            {"object", "chat.completion.chunk"},
            {"created", identity_.created},
            {"model", identity_.model},
            {"choices", Json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish_reason}}})}};
}

bool GenerationSink::on_token(const runtime::SampledToken& sampled) {
    const int32_t token = sampled.id;
    tokens_.push_back(token);
    if (want_logprobs_) sampled_.push_back(sampled);
    const text::OutputDelta delta = answer_.push(token);
    if (endpoint_ == Endpoint::llama_completion) {
        if (stream_) send_event({{"content", delta.content}, {"tokens", Json::array({token})}, {"stop", false}});
    } else {
        emit(delta);
    }
    return !answer_.stopped();
}

// Completions: the text as content. Chat: the reasoning, content and tool calls.
void GenerationSink::emit(const text::OutputDelta& delta) {
    if (endpoint_ == Endpoint::completions) {
        if (!stream_ || delta.content.empty()) return;
        return send_event({{"id", identity_.id},
                           {"object", "text_completion"},
                           {"created", identity_.created},
                           {"model", identity_.model},
                           {"choices", Json::array({{{"text", delta.content}, {"index", 0}, {"logprobs", nullptr},
                                                     {"finish_reason", nullptr}}})}});
    }
    if (stream_ && !delta.reasoning.empty()) send_event(chat_chunk({{"reasoning_content", delta.reasoning}}, nullptr));
    if (stream_ && !delta.content.empty()) send_event(chat_chunk({{"content", delta.content}}, nullptr));
    for (const text::ToolCall& call : delta.tool_calls) {
        const size_t index = tool_calls_.size();
        Json entry = {{"id", "call_" + identity_.id + "_" + std::to_string(index)},
                      {"type", "function"},
                      {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
        tool_calls_.push_back(entry);
        if (!stream_) continue;
        entry["index"] = index;
        send_event(chat_chunk({{"tool_calls", Json::array({entry})}}, nullptr));
    }
}

Json usage_json(const runtime::GenerationSummary& summary) {
    return {{"prompt_tokens", summary.n_prompt},
            {"completion_tokens", summary.n_generated},
            {"total_tokens", summary.n_prompt + summary.n_generated},
            {"prompt_tokens_details", {{"cached_tokens", summary.n_cached}}}};
}

std::string GenerationSink::finish_reason(const runtime::GenerationSummary& summary) const {
    const std::string_view reason = runtime::finish_reason_name(summary.finish);
    return reason == "stop" && !tool_calls_.empty() ? "tool_calls" : std::string(reason);
}

HttpResponse GenerationSink::whole_response(const runtime::GenerationSummary& summary) const {
    Json body;
    if (endpoint_ == Endpoint::chat) {
        Json message = {{"role", "assistant"}};
        const text::ParsedOutput& answer = answer_.parsed();
        message["content"] = answer.content.empty() && !tool_calls_.empty() ? Json(nullptr) : Json(answer.content);
        if (!answer.reasoning.empty()) message["reasoning_content"] = answer.reasoning;
        if (!tool_calls_.empty()) message["tool_calls"] = tool_calls_;
        body = {{"id", identity_.id},
                {"object", "chat.completion"},
                {"created", identity_.created},
                {"model", identity_.model},
                {"choices", Json::array({{{"index", 0}, {"message", std::move(message)},
                                          {"logprobs", want_logprobs_ ? logprobs(0) : Json(nullptr)},
                                          {"finish_reason", finish_reason(summary)}}})},
                {"usage", usage_json(summary)}};
    } else {
        body = {{"id", identity_.id},
                {"object", "text_completion"},
                {"created", identity_.created},
                {"model", identity_.model},
                {"choices", Json::array({{{"text", answer_.parsed().content}, {"index", 0},
                                          {"logprobs", want_logprobs_ ? logprobs(0) : Json(nullptr)},
                                          {"finish_reason", finish_reason(summary)}}})},
                {"usage", usage_json(summary)}};
    }
    return HttpResponse{200, "application/json", dump(body), {}};
}

void GenerationSink::on_finish(const runtime::GenerationSummary& summary) {
    // Cut short: only a server that is stopping still has a client to tell (a client that went
    // away cancels its own job), and it must not read as a real stop.
    if (summary.outcome != runtime::JobOutcome::finished) {
        const bool cancelled = summary.outcome == runtime::JobOutcome::cancelled;
        const std::string message = cancelled ? "generation cut short: the server is shutting down"
                                              : "generation failed: " + summary.error;
        const char* code = cancelled ? "server_shutdown" : "generation_failed";
        if (!stream_) return channel_->respond(error_response(cancelled ? 503 : 500, message, "server_error", code));
        send_event({{"error", {{"message", message}, {"type", "server_error"}, {"code", code}}}});
        if (endpoint_ != Endpoint::llama_completion) channel_->send("data: [DONE]\n\n");
        return channel_->finish();
    }
    const text::OutputDelta rest = answer_.finish();  // what the assembler still held
    const std::string& content = answer_.parsed().content;
    if (endpoint_ == Endpoint::llama_completion) {
        const char* stop_type = summary.finish == runtime::FinishReason::stop_id ? "eos"
                                : summary.finish == runtime::FinishReason::stop_string ? "word"
                                                                                    : "limit";
        Json last = {{"content", stream_ ? rest.content : content},
                     {"tokens", stream_ ? std::vector<int32_t>() : tokens_},
                     {"stop", true},
                     {"stop_type", stop_type},
                     {"stopping_word", answer_.matched_stop()},
                     {"model", identity_.model},
                     {"tokens_predicted", summary.n_generated},
                     {"tokens_evaluated", summary.n_prompt},
                     {"timings", {{"queue_ms", summary.queue_ms},
                                  {"first_token_ms", summary.first_token_ms},
                                  {"total_ms", summary.total_ms}}}};
        if (want_logprobs_ && !stream_) last["completion_probabilities"] = logprobs(0);
        if (!stream_) return channel_->respond(HttpResponse{200, "application/json", dump(last), {}});
        send_event(last);
        return channel_->finish();
    }
    emit(rest);
    if (!stream_) return channel_->respond(whole_response(summary));
    if (endpoint_ == Endpoint::chat) {
        send_event(chat_chunk(Json::object(), finish_reason(summary)));
    } else {
        send_event({{"id", identity_.id},
                    {"object", "text_completion"},
                    {"created", identity_.created},
                    {"model", identity_.model},
                    {"choices", Json::array({{{"text", ""}, {"index", 0}, {"logprobs", nullptr},
                                              {"finish_reason", finish_reason(summary)}}})}});
    }
    if (include_usage_) {
        send_event({{"id", identity_.id},
                    {"object", endpoint_ == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
                    {"created", identity_.created},
                    {"model", identity_.model},
                    {"choices", Json::array()},
                    {"usage", usage_json(summary)}});
    }
    channel_->send("data: [DONE]\n\n");
    channel_->finish();
}

}  // namespace k3::server
