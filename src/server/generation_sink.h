// One generation request's answer, built as tokens arrive (on the scheduler thread): detokenized,
// cut at stop strings, split into reasoning / content / tool calls for chat, and shaped as
// OpenAI's chat.completion(.chunk), text_completion, or llama.cpp's /completion answer, whole
// or as server-sent events, into a ResponseChannel; for the agent APIs the parsed answer goes to
// an AnswerFormat that shapes it instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scheduler.h"
#include "server/answer_format.h"
#include "server/http_types.h"
#include "server/request_parsing.h"
#include "text/output_parser.h"
#include "text/stop_strings.h"
#include "text/tokenizer.h"

namespace k3::server {

struct ResponseIdentity {
    std::string id;     // e.g. "chatcmpl-..."
    std::string model;  // the model name answered in every response
    int64_t created = 0;
};

class GenerationSink final : public runtime::TokenSink {
public:
    // `chat` (for Endpoint::chat): where the generation prompt left the model and the tools the
    // output parser should know.
    GenerationSink(Endpoint endpoint, const text::Tokenizer& tokenizer, std::shared_ptr<ResponseChannel> channel,
                   ResponseIdentity identity, const GenerationParams& params, const ChatInput* chat);
    // A chat answer in an agent API's shape: `format` writes the channel.
    GenerationSink(const text::Tokenizer& tokenizer, std::unique_ptr<AnswerFormat> format,
                   const GenerationParams& params, const ChatInput& chat);

    // For streams: the response head and, for chat, the opening chunk (role "assistant").
    void begin();
    bool on_token(const runtime::SampledToken& sampled) override;
    void on_finish(const runtime::GenerationSummary& summary) override;

private:
    void route(const std::string& text);  // text past the stop strings
    void emit(const text::OutputDelta& delta);
    void send_event(const Json& event);
    Json chat_chunk(Json delta, const Json& finish_reason) const;
    Json usage(const runtime::GenerationSummary& summary) const;
    std::string finish_reason(const runtime::GenerationSummary& summary) const;
    HttpResponse whole_response(const runtime::GenerationSummary& summary) const;
    // The log-probabilities of the tokens from `from` on, in the endpoint's shape (OpenAI chat's
    // {"content": [...]}, OpenAI completions' parallel arrays, llama.cpp's list).
    Json logprobs(size_t from) const;
    // Puts the tokens not yet streamed into a streamed event (nothing without logprobs).
    void attach_logprobs(Json& event);

    Endpoint endpoint_;
    std::shared_ptr<ResponseChannel> channel_;
    ResponseIdentity identity_;
    bool stream_, include_usage_;
    text::StreamingDetokenizer detokenizer_;
    text::StopStringFilter stops_;
    std::vector<int32_t> tokens_;  // generated ids (llama.cpp's "tokens")
    std::string content_, reasoning_;
    Json tool_calls_ = Json::array();
    std::optional<text::OutputParser> parser_;  // chat only
    const text::Tokenizer& tokenizer_;
    bool want_logprobs_;
    std::vector<runtime::SampledToken> sampled_;  // with logprobs, every generated token
    size_t logprobs_streamed_ = 0;                // of sampled_
    std::unique_ptr<AnswerFormat> format_;        // agent APIs: the answer's shape
};

}  // namespace k3::server
