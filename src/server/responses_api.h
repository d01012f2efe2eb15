// OpenAI's Responses API (POST /v1/responses) on top of the chat path: `input` items (messages,
// function calls and their outputs, reasoning), `instructions`, function tools, `text.format` and
// `reasoning.effort` are translated into the equivalent chat-completions body, then validated,
// rendered and sampled exactly as /v1/chat/completions is (grammars included); the answer comes
// back as a "response" object with output items, whole or as its stream of events. k3 keeps no
// responses: `store: true` and `previous_response_id` are refused by name. The translation is in
// responses_request.cpp (request parsing alone, so that it can be fuzzed).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/answer_format.h"
#include "server/http_types.h"
#include "server/request_parsing.h"

namespace k3::server::responses {

struct Translation {
    Json chat;  // the chat-completions body
    Json echo;  // the request's settings as the response object repeats them
};
// Throws ApiError (400) naming the field for anything malformed or not supported.
Translation chat_request(const Json& body);

// The answer as a "response" object, or as response.created ... response.completed events.
class ResponseFormat final : public BlockAnswer {
public:
    // `id`: "resp_..."; `echo`: from Translation.
    ResponseFormat(std::shared_ptr<ResponseChannel> channel, bool stream, std::string id, std::string model,
                   int64_t created_at, Json echo);

    void begin() override;
    void finish(const runtime::GenerationSummary& summary, const std::string& stop_sequence) override;
    void fail(int status, const std::string& message, const std::string& code) override;

private:
    void block_opened(size_t index) override;
    void block_grew(size_t index, const std::string& piece) override;
    void block_closed(size_t index) override;
    std::string call_id(size_t index) const override;
    std::string item_id(size_t index) const;
    Json output_item(size_t index, bool done) const;
    Json response_object(const runtime::GenerationSummary* summary) const;  // null: still in progress
    void send(Json event);  // numbered, named by its own "type"

    std::string model_;
    int64_t created_at_;
    Json echo_;
    int64_t sequence_number_ = 0;
};

}  // namespace k3::server::responses
