#include "server/anthropic_api.h"

namespace k3::server::anthropic {

namespace {

const char* error_type(int status) {
    switch (status) {
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 503: return "overloaded_error";
        default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

}  // namespace

MessageFormat::MessageFormat(std::shared_ptr<ResponseChannel> channel, bool stream, std::string id, std::string model,
                             int64_t n_prompt)
    : BlockAnswer(std::move(channel), stream, std::move(id)), model_(std::move(model)), n_prompt_(n_prompt) {}

std::string MessageFormat::call_id(size_t index) const {
    return "toolu_" + id_.substr(id_.find('_') + 1) + "_" + std::to_string(index);
}

void MessageFormat::send(const Json& event) { send_event(event["type"].get<std::string>(), event); }

void MessageFormat::begin() {
    if (!stream_) return;
    channel_->start_stream("text/event-stream");
    send({{"type", "message_start"},
          {"message", {{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_},
                       {"content", Json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                       {"usage", {{"input_tokens", n_prompt_}, {"output_tokens", 0}}}}}});
    send({{"type", "ping"}});
}

void MessageFormat::block_opened(size_t index) {
    const AnswerBlock& block = blocks_[index];
    Json start;
    switch (block.kind) {
        case AnswerBlock::Kind::reasoning: start = {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}; break;
        case AnswerBlock::Kind::text: start = {{"type", "text"}, {"text", ""}}; break;
        case AnswerBlock::Kind::tool_call:
            start = {{"type", "tool_use"}, {"id", block.call_id}, {"name", block.name}, {"input", Json::object()}};
            break;
    }
    send({{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(start)}});
}

void MessageFormat::block_grew(size_t index, const std::string& piece) {
    Json delta;
    switch (blocks_[index].kind) {
        case AnswerBlock::Kind::reasoning: delta = {{"type", "thinking_delta"}, {"thinking", piece}}; break;
        case AnswerBlock::Kind::text: delta = {{"type", "text_delta"}, {"text", piece}}; break;
        case AnswerBlock::Kind::tool_call: delta = {{"type", "input_json_delta"}, {"partial_json", piece}}; break;
    }
    send({{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}});
}

void MessageFormat::block_closed(size_t index) { send({{"type", "content_block_stop"}, {"index", index}}); }

void MessageFormat::finish(const runtime::GenerationSummary& summary, const std::string& stop_sequence) {
    const bool cut = summary.finish == runtime::FinishReason::length || summary.finish == runtime::FinishReason::context;
    const char* stop_reason = cut                     ? "max_tokens"
                              : !stop_sequence.empty() ? "stop_sequence"
                              : has_tool_call()        ? "tool_use"
                                                       : "end_turn";
    const Json stopped = stop_sequence.empty() ? Json(nullptr) : Json(stop_sequence);
    // Anthropic counts prompt tokens read from its cache apart from input_tokens.
    const Json usage = {{"input_tokens", summary.n_prompt - summary.n_cached},
                        {"cache_creation_input_tokens", 0},
                        {"cache_read_input_tokens", summary.n_cached},
                        {"output_tokens", summary.n_generated}};
    if (stream_) {
        close_open_block();
        send({{"type", "message_delta"}, {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stopped}}},
              {"usage", usage}});
        send({{"type", "message_stop"}});
        return channel_->finish();
    }
    Json content = Json::array();
    for (const AnswerBlock& block : blocks_) {
        switch (block.kind) {
            case AnswerBlock::Kind::reasoning:
                content.push_back({{"type", "thinking"}, {"thinking", block.text}, {"signature", ""}});
                break;
            case AnswerBlock::Kind::text: content.push_back({{"type", "text"}, {"text", block.text}}); break;
            case AnswerBlock::Kind::tool_call: {
                // The output parser's arguments are always a JSON object.
                Json input = Json::parse(block.text, nullptr, /*allow_exceptions=*/false);
                content.push_back({{"type", "tool_use"}, {"id", block.call_id}, {"name", block.name},
                                   {"input", input.is_object() ? input : Json::object()}});
                break;
            }
        }
    }
    const Json message = {{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_},
                          {"content", std::move(content)}, {"stop_reason", stop_reason},
                          {"stop_sequence", stopped}, {"usage", usage}};
    channel_->respond(HttpResponse{200, "application/json", dump_json(message), {}});
}

void MessageFormat::fail(int status, const std::string& message, const std::string&) {
    if (!stream_) return channel_->respond(error_response(status, message));
    send({{"type", "error"}, {"error", {{"type", error_type(status)}, {"message", message}}}});
    channel_->finish();
}

HttpResponse error_response(int status, const std::string& message) {
    const Json body = {{"type", "error"}, {"error", {{"type", error_type(status)}, {"message", message}}}};
    return HttpResponse{status, "application/json", dump_json(body), {}};
}

HttpResponse reshape_error(const HttpResponse& openai_error) {
    const Json body = Json::parse(openai_error.body, nullptr, /*allow_exceptions=*/false);
    const Json* error = body.is_object() ? member(body, "error") : nullptr;
    const Json* message = error && error->is_object() ? member(*error, "message") : nullptr;
    HttpResponse reshaped = error_response(openai_error.status, message && message->is_string()
                                                                    ? message->get<std::string>()
                                                                    : openai_error.body);
    reshaped.headers = openai_error.headers;
    return reshaped;
}

}  // namespace k3::server::anthropic
