#include "server/responses_api.h"

#include "server/http_server.h"

namespace k3::server::responses {

ResponseFormat::ResponseFormat(std::shared_ptr<ResponseChannel> channel, bool stream, std::string id, std::string model,
                               int64_t created_at, Json echo)
    : BlockAnswer(std::move(channel), stream, std::move(id)),
      model_(std::move(model)),
      created_at_(created_at),
      echo_(std::move(echo)) {}

std::string ResponseFormat::call_id(size_t index) const {
    return "call_" + id_.substr(id_.find('_') + 1) + "_" + std::to_string(index);
}

std::string ResponseFormat::item_id(size_t index) const {
    const char* prefix = blocks_[index].kind == AnswerBlock::Kind::reasoning ? "rs_"
                         : blocks_[index].kind == AnswerBlock::Kind::text    ? "msg_"
                                                                              : "fc_";
    return prefix + id_.substr(id_.find('_') + 1) + "_" + std::to_string(index);
}

// An output item as it stands (`done`), or as announced when it opens (empty).
Json ResponseFormat::output_item(size_t index, bool done) const {
    const AnswerBlock& block = blocks_[index];
    const std::string text = done ? block.text : "";
    const char* status = done ? "completed" : "in_progress";
    switch (block.kind) {
        case AnswerBlock::Kind::reasoning:
            return {{"id", item_id(index)}, {"type", "reasoning"}, {"summary", Json::array()},
                    {"content", done ? Json::array({{{"type", "reasoning_text"}, {"text", text}}}) : Json::array()}};
        case AnswerBlock::Kind::text:
            return {{"id", item_id(index)}, {"type", "message"}, {"status", status}, {"role", "assistant"},
                    {"content", done ? Json::array({{{"type", "output_text"}, {"text", text},
                                                     {"annotations", Json::array()}, {"logprobs", Json::array()}}})
                                     : Json::array()}};
        case AnswerBlock::Kind::tool_call:
            break;
    }
    return {{"id", item_id(index)}, {"type", "function_call"}, {"status", status}, {"call_id", block.call_id},
            {"name", block.name}, {"arguments", text}};
}

Json ResponseFormat::response_object(const runtime::GenerationSummary* summary) const {
    const bool cut = summary && (summary->finish == runtime::FinishReason::length ||
                                 summary->finish == runtime::FinishReason::context);
    Json response = {{"id", id_}, {"object", "response"}, {"created_at", created_at_},
                     {"status", !summary ? "in_progress" : cut ? "incomplete" : "completed"}, {"error", nullptr},
                     {"incomplete_details", cut ? Json{{"reason", "max_output_tokens"}} : Json(nullptr)},
                     {"model", model_}};
    response.update(echo_);
    Json output = Json::array();
    if (summary)
        for (size_t i = 0; i < blocks_.size(); ++i) output.push_back(output_item(i, true));
    response["output"] = std::move(output);
    response["usage"] = nullptr;
    if (summary)
        response["usage"] = {{"input_tokens", summary->n_prompt},
                             {"input_tokens_details", {{"cached_tokens", summary->n_cached}}},
                             {"output_tokens", summary->n_generated},
                             {"total_tokens", summary->n_prompt + summary->n_generated}};
    return response;
}

void ResponseFormat::send(Json event) {
    event["sequence_number"] = sequence_number_++;
    send_event(event["type"].get<std::string>(), event);
}

void ResponseFormat::begin() {
    if (!stream_) return;
    channel_->start_stream("text/event-stream");
    send({{"type", "response.created"}, {"response", response_object(nullptr)}});
    send({{"type", "response.in_progress"}, {"response", response_object(nullptr)}});
}

void ResponseFormat::block_opened(size_t index) {
    send({{"type", "response.output_item.added"}, {"output_index", index}, {"item", output_item(index, false)}});
    const AnswerBlock::Kind kind = blocks_[index].kind;
    if (kind == AnswerBlock::Kind::tool_call) return;
    const Json part = kind == AnswerBlock::Kind::text
                          ? Json{{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}}
                          : Json{{"type", "reasoning_text"}, {"text", ""}};
    send({{"type", "response.content_part.added"}, {"item_id", item_id(index)}, {"output_index", index},
          {"content_index", 0}, {"part", part}});
}

void ResponseFormat::block_grew(size_t index, const std::string& piece) {
    const AnswerBlock::Kind kind = blocks_[index].kind;
    const char* type = kind == AnswerBlock::Kind::reasoning ? "response.reasoning_text.delta"
                       : kind == AnswerBlock::Kind::text    ? "response.output_text.delta"
                                                            : "response.function_call_arguments.delta";
    Json event = {{"type", type}, {"item_id", item_id(index)}, {"output_index", index}};
    if (kind != AnswerBlock::Kind::tool_call) event["content_index"] = 0;
    event["delta"] = piece;
    if (kind == AnswerBlock::Kind::text) event["logprobs"] = Json::array();
    send(std::move(event));
}

void ResponseFormat::block_closed(size_t index) {
    const AnswerBlock& block = blocks_[index];
    const Json item = output_item(index, true);
    if (block.kind == AnswerBlock::Kind::tool_call) {
        send({{"type", "response.function_call_arguments.done"}, {"item_id", item_id(index)}, {"output_index", index},
              {"name", block.name}, {"arguments", block.text}});
    } else {
        const bool text = block.kind == AnswerBlock::Kind::text;
        Json done = {{"type", text ? "response.output_text.done" : "response.reasoning_text.done"},
                     {"item_id", item_id(index)}, {"output_index", index}, {"content_index", 0}, {"text", block.text}};
        if (text) done["logprobs"] = Json::array();
        send(std::move(done));
        send({{"type", "response.content_part.done"}, {"item_id", item_id(index)}, {"output_index", index},
              {"content_index", 0}, {"part", item["content"][0]}});
    }
    send({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
}

void ResponseFormat::finish(const runtime::GenerationSummary& summary, const std::string&) {
    Json response = response_object(&summary);
    if (!stream_) return channel_->respond(HttpResponse{200, "application/json", dump_json(response), {}});
    close_open_block();
    const bool complete = response["status"] == "completed";
    send({{"type", complete ? "response.completed" : "response.incomplete"}, {"response", std::move(response)}});
    channel_->finish();
}

void ResponseFormat::fail(int status, const std::string& message, const std::string& code) {
    if (!stream_) return channel_->respond(error_response(status, message, "server_error", code));
    send({{"type", "error"}, {"code", code}, {"message", message}, {"param", nullptr}});
    channel_->finish();
}

}  // namespace k3::server::responses
