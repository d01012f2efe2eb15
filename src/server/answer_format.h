// The wire shape of a chat answer for the agent APIs (Anthropic's /v1/messages, OpenAI's
// /v1/responses). GenerationSink detokenizes, cuts at stop strings and parses the output as for
// chat completions, then hands each parsed piece to an AnswerFormat instead of shaping OpenAI
// chunks. BlockAnswer holds what both agent APIs share: the answer as a list of blocks
// (reasoning, text, tool call) that open, grow and close in order, streamed as events as they do.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/scheduler.h"
#include "server/http_types.h"
#include "server/request_parsing.h"
#include "text/output_parser.h"

namespace k3::server {

class AnswerFormat {
public:
    virtual ~AnswerFormat() = default;
    virtual void begin() = 0;                               // before the first token
    virtual void add(const text::OutputDelta& delta) = 0;   // what the output parser completed
    // A generation that ran to its end; `stop_sequence` is the stop string that ended it, if any.
    virtual void finish(const runtime::GenerationSummary& summary, const std::string& stop_sequence) = 0;
    // One cut short: 503 when the server is stopping, 500 when the generation failed.
    virtual void fail(int status, const std::string& message, const std::string& code) = 0;
};

struct AnswerBlock {
    enum class Kind { reasoning, text, tool_call };
    Kind kind;
    std::string text;     // reasoning or text; a tool call's arguments (a JSON object)
    std::string name;     // tool calls: the function
    std::string call_id;  // tool calls: the id the client answers with
};

class BlockAnswer : public AnswerFormat {
public:
    void add(const text::OutputDelta& delta) final;

protected:
    // `id`: the response's own id, from which the tool calls' ids are made.
    BlockAnswer(std::shared_ptr<ResponseChannel> channel, bool stream, std::string id);

    // Stream events, called only when streaming: blocks_[index] began (empty, or for a tool call
    // with its name and id), grew by `piece`, or is complete.
    virtual void block_opened(size_t index) = 0;
    virtual void block_grew(size_t index, const std::string& piece) = 0;
    virtual void block_closed(size_t index) = 0;
    // The id of the tool call that is block `index`, in the API's own style.
    virtual std::string call_id(size_t index) const = 0;

    void close_open_block();  // before the final events
    bool has_tool_call() const;
    // One server-sent event: "event: NAME" and its JSON data.
    void send_event(const std::string& name, const Json& data);

    std::shared_ptr<ResponseChannel> channel_;
    const bool stream_;
    const std::string id_;
    std::vector<AnswerBlock> blocks_;

private:
    void append(AnswerBlock::Kind kind, const std::string& piece);
    bool open_ = false;  // the last block can still grow
};

}  // namespace k3::server
