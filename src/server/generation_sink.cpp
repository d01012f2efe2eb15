#include "server/generation_sink.h"

#include "server/http_server.h"

namespace k3::server {

namespace {

// A generation cut short, as a whole answer and as a streamed event. Only a server that is
// stopping still has a client to tell (a client that went away cancels its own job), and it
// must not read as a real stop.
struct CutShort {
    int status;
    std::string message;
    const char* code;
    HttpResponse response;
    Json event;
};
CutShort cut_short(const runtime::GenerationSummary& summary) {
    const bool cancelled = summary.outcome == runtime::JobOutcome::cancelled;
    const std::string message = cancelled ? "generation cut short: the server is shutting down"
                                          : "generation failed: " + summary.error;
    const char* code = cancelled ? "server_shutdown" : "generation_failed";
    const int status = cancelled ? 503 : 500;
    return {status, message, code, error_response(status, message, "server_error", code),
            {{"error", {{"message", message}, {"type", "server_error"}, {"code", code}}}}};
}

text::AnswerOptions answer_options(const GenerationParams& params, const ChatInput* chat, const OutputOptions& output) {
    text::AnswerOptions options;
    options.stop_strings = params.stop;
    options.show_special = output.special;
    if (chat) {
        options.chat = chat->thinking ? text::OutputStart::Think : text::OutputStart::Response;
        options.tools = nlohmann::json::parse(chat->tools.dump());
    }
    return options;
}

}  // namespace

GenerationSink::GenerationSink(Endpoint endpoint, const text::Tokenizer& tokenizer,
                               std::shared_ptr<ResponseChannel> channel, ResponseIdentity identity,
                               const GenerationParams& params, const ChatInput* chat, OutputOptions output,
                               std::shared_ptr<ChoiceGroup> group, size_t choice)
    : endpoint_(endpoint),
      channel_(std::move(channel)),
      identity_(std::move(identity)),
      stream_(params.stream),
      output_(output),
      group_(std::move(group)),
      choice_(choice),
      answer_(tokenizer, answer_options(params, chat, output)),
      tokenizer_(tokenizer),
      want_logprobs_(params.sampling.logprobs) {}

GenerationSink::GenerationSink(const text::Tokenizer& tokenizer, std::unique_ptr<AnswerFormat> format,
                               const GenerationParams& params, const ChatInput& chat, OutputOptions output)
    : GenerationSink(Endpoint::chat, tokenizer, nullptr, {}, params, &chat,
                     {.special = output.special, .reasoning = ReasoningFormat::automatic}) {
    format_ = std::move(format);
}

void GenerationSink::begin() {
    if (format_) return format_->begin();
    if (!stream_) return;
    if (choice_ == 0) channel_->start_stream("text/event-stream");
    if (endpoint_ == Endpoint::chat) send_event(chat_chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
}

void GenerationSink::send_event(const Json& event) {
    if (!want_logprobs_) return channel_->send("data: " + dump_json(event) + "\n\n");
    Json with_logprobs = event;
    attach_logprobs(with_logprobs);
    channel_->send("data: " + dump_json(with_logprobs) + "\n\n");
}

void GenerationSink::attach_logprobs(Json& event) {
    if (!want_logprobs_ || logprobs_streamed_ == sampled_.size()) return;
    if (endpoint_ == Endpoint::llama_completion) {
        event["completion_probabilities"] = logprobs(logprobs_streamed_);
    } else {
        if (!event.contains("choices") || event["choices"].empty()) return;
        event["choices"][0]["logprobs"] = logprobs(logprobs_streamed_);  // the one choice of this sink
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
            {"choices", Json::array({{{"index", choice_}, {"delta", std::move(delta)}, {"finish_reason", finish_reason}}})}};
}

Json GenerationSink::completion_chunk(const std::string& text, const Json& finish_reason) const {
    return {{"id", identity_.id},
            {"object", "text_completion"},
            {"created", identity_.created},
            {"model", identity_.model},
            {"choices", Json::array({{{"text", text}, {"index", choice_}, {"logprobs", nullptr},
                                      {"finish_reason", finish_reason}}})}};
}

bool GenerationSink::on_token(const runtime::SampledToken& sampled) {
    const int32_t token = sampled.id;
    tokens_.push_back(token);
    if (want_logprobs_) sampled_.push_back(sampled);
    if (group_) group_->choice_started(choice_);
    const text::OutputDelta delta = answer_.push(token);
    if (endpoint_ == Endpoint::llama_completion) {
        if (stream_) send_event({{"content", delta.content}, {"tokens", Json::array({token})}, {"stop", false}});
    } else {
        emit(delta);
    }
    return !answer_.stopped();
}

void GenerationSink::fold_reasoning(text::OutputDelta& delta) {
    std::string content;
    if (!delta.reasoning.empty()) {
        if (!in_think_) content = "<think>";
        in_think_ = true;
        content += delta.reasoning;
        delta.reasoning.clear();
    }
    if (in_think_ && (!delta.content.empty() || !delta.tool_calls.empty())) {
        content += "</think>";
        in_think_ = false;
    }
    delta.content = content + delta.content;
}

// Completions: the text as content. Chat: the reasoning, content and tool calls.
void GenerationSink::emit(text::OutputDelta delta) {
    if (format_) return format_->add(delta);
    if (endpoint_ != Endpoint::chat) {
        if (stream_ && !delta.content.empty()) send_event(completion_chunk(delta.content, nullptr));
        return;
    }
    if (output_.reasoning == ReasoningFormat::none) fold_reasoning(delta);
    reasoning_ += delta.reasoning;
    content_ += delta.content;
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

std::string GenerationSink::finish_reason(const runtime::GenerationSummary& summary) const {
    const std::string_view reason = runtime::finish_reason_name(summary.finish);
    return reason == "stop" && !tool_calls_.empty() ? "tool_calls" : std::string(reason);
}

Json GenerationSink::choice_entry(const runtime::GenerationSummary& summary) const {
    const Json logprobs_entry = want_logprobs_ ? logprobs(0) : Json(nullptr);
    if (endpoint_ != Endpoint::chat)
        return {{"text", answer_.parsed().content}, {"index", choice_}, {"logprobs", logprobs_entry},
                {"finish_reason", finish_reason(summary)}};
    Json message = {{"role", "assistant"}};
    message["content"] = content_.empty() && !tool_calls_.empty() ? Json(nullptr) : Json(content_);
    if (!reasoning_.empty()) message["reasoning_content"] = reasoning_;
    if (!tool_calls_.empty()) message["tool_calls"] = tool_calls_;
    return {{"index", choice_}, {"message", std::move(message)}, {"logprobs", logprobs_entry},
            {"finish_reason", finish_reason(summary)}};
}

void GenerationSink::finish_llama_completion(const runtime::GenerationSummary& summary) {
    channel_->set_tokens({summary.n_prompt, summary.n_generated});
    if (summary.outcome != runtime::JobOutcome::finished) {
        CutShort error = cut_short(summary);
        if (!stream_) return channel_->respond(std::move(error.response));
        send_event(error.event);
        return channel_->finish();
    }
    const text::OutputDelta rest = answer_.finish();  // what the assembler still held
    const char* stop_type = summary.finish == runtime::FinishReason::stop_id       ? "eos"
                            : summary.finish == runtime::FinishReason::stop_string ? "word"
                                                                                   : "limit";
    Json last = {{"content", stream_ ? rest.content : answer_.parsed().content},
                 {"tokens", stream_ ? std::vector<int32_t>() : tokens_},
                 {"stop", true},
                 {"stop_type", stop_type},
                 {"stopping_word", answer_.matched_stop()},
                 {"model", identity_.model},
                 {"tokens_predicted", summary.n_generated},
                 {"tokens_evaluated", summary.n_prompt},
                 {"tokens_cached", summary.n_cached},
                 {"timings", {{"queue_ms", summary.queue_ms},
                              {"first_token_ms", summary.first_token_ms},
                              {"total_ms", summary.total_ms}}}};
    if (want_logprobs_ && !stream_) last["completion_probabilities"] = logprobs(0);
    if (!stream_) return channel_->respond(HttpResponse{200, "application/json", dump_json(last), {}});
    send_event(last);
    channel_->finish();
}

void GenerationSink::on_finish(const runtime::GenerationSummary& summary) {
    if (!group_ && !format_) return finish_llama_completion(summary);
    if (summary.outcome != runtime::JobOutcome::finished) {
        CutShort error = cut_short(summary);
        if (format_) return format_->fail(error.status, error.message, error.code);
        if (stream_) send_event(error.event);
        return group_->finish_choice(choice_, nullptr, summary, std::move(error.response));
    }
    emit(answer_.finish());  // what the assembler still held
    if (in_think_) {  // the answer ended inside its reasoning
        in_think_ = false;
        emit({.reasoning = {}, .content = "</think>", .tool_calls = {}});
    }
    if (format_) return format_->finish(summary, answer_.matched_stop());
    if (stream_)
        send_event(endpoint_ == Endpoint::chat ? chat_chunk(Json::object(), finish_reason(summary))
                                               : completion_chunk("", finish_reason(summary)));
    group_->finish_choice(choice_, stream_ ? Json(nullptr) : choice_entry(summary), summary, std::nullopt);
}

}  // namespace k3::server
