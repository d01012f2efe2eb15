// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) on top of the chat
// path: a request is translated into the equivalent chat-completions body (system prompt,
// text / tool_use / tool_result blocks, tools, tool_choice, thinking) and then validated, rendered
// and sampled exactly as /v1/chat/completions is; the answer comes back as Anthropic's message,
// whole or as its stream of events, and errors in Anthropic's shape. The translation is in
// anthropic_request.cpp (which depends on request parsing alone, so that it can be fuzzed).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/answer_format.h"
#include "server/http_types.h"
#include "server/request_parsing.h"

namespace k3::server::anthropic {

// The chat-completions body equivalent to a /v1/messages body (`count_tokens`: a count_tokens
// body, which has no max_tokens and no sampling fields). Throws ApiError (400) naming the field
// for anything malformed or not supported.
Json chat_request(const Json& body, bool count_tokens);

// The answer as Anthropic's "message" object, or as message_start ... message_stop events.
class MessageFormat final : public BlockAnswer {
public:
    // `id`: "msg_..."; `n_prompt`: the prompt's tokens, announced in message_start.
    MessageFormat(std::shared_ptr<ResponseChannel> channel, bool stream, std::string id, std::string model,
                  int64_t n_prompt);

    void begin() override;
    void finish(const runtime::GenerationSummary& summary, const std::string& stop_sequence) override;
    void fail(int status, const std::string& message, const std::string& code) override;

private:
    void block_opened(size_t index) override;
    void block_grew(size_t index, const std::string& piece) override;
    void block_closed(size_t index) override;
    std::string call_id(size_t index) const override;
    void send(const Json& event);  // the event named by its own "type"

    std::string model_;
    int64_t n_prompt_;
};

// {"type": "error", "error": {"type", "message"}} with Anthropic's error type for `status`.
HttpResponse error_response(int status, const std::string& message);
// An OpenAI-shaped error response (as the shared request path throws them) in Anthropic's shape.
HttpResponse reshape_error(const HttpResponse& openai_error);

}  // namespace k3::server::anthropic
