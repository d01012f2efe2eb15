#include "server/answer_format.h"

namespace k3::server {

BlockAnswer::BlockAnswer(std::shared_ptr<ResponseChannel> channel, bool stream, std::string id)
    : channel_(std::move(channel)), stream_(stream), id_(std::move(id)) {}

void BlockAnswer::add(const text::OutputDelta& delta) {
    append(AnswerBlock::Kind::reasoning, delta.reasoning);
    append(AnswerBlock::Kind::text, delta.content);
    for (const text::ToolCall& call : delta.tool_calls) {
        close_open_block();
        const size_t index = blocks_.size();
        blocks_.push_back({AnswerBlock::Kind::tool_call, "", call.name, call_id(index)});
        if (stream_) block_opened(index);
        blocks_.back().text = call.arguments;
        if (stream_) block_grew(index, call.arguments);
        open_ = true;
        close_open_block();
    }
}

void BlockAnswer::append(AnswerBlock::Kind kind, const std::string& piece) {
    if (piece.empty()) return;
    if (!open_ || blocks_.back().kind != kind) {
        close_open_block();
        blocks_.push_back({kind, "", "", ""});
        open_ = true;
        if (stream_) block_opened(blocks_.size() - 1);
    }
    blocks_.back().text += piece;
    if (stream_) block_grew(blocks_.size() - 1, piece);
}

void BlockAnswer::close_open_block() {
    if (!open_) return;
    open_ = false;
    if (stream_) block_closed(blocks_.size() - 1);
}

bool BlockAnswer::has_tool_call() const {
    for (const AnswerBlock& block : blocks_)
        if (block.kind == AnswerBlock::Kind::tool_call) return true;
    return false;
}

void BlockAnswer::send_event(const std::string& name, const Json& data) {
    channel_->send("event: " + name + "\ndata: " + dump_json(data) + "\n\n");
}

}  // namespace k3::server
