// One generation's answer, built as tokens arrive (on the scheduler thread) by the
// text::AnswerAssembler that `k3 run` and `k3 chat` use too (control tokens dropped unless
// --special, cut at stop strings, split into reasoning / content / tool calls for chat), and shaped as one choice of OpenAI's chat.completion(.chunk) or
// text_completion (a ChoiceGroup puts the choices together), or as llama.cpp's /completion
// answer, whole or as server-sent events, into a ResponseChannel; for the agent APIs the parsed
// answer goes to an AnswerFormat that shapes it instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scheduler.h"
#include "server/answer_format.h"
#include "server/choice_group.h"
#include "server/http_types.h"
#include "server/request_parsing.h"
#include "text/answer_assembler.h"
#include "text/tokenizer.h"

namespace k3::server {

struct ResponseIdentity {
    std::string id;     // e.g. "chatcmpl-..."
    std::string model;  // the model name answered in every response
    int64_t created = 0;
};

// `k3 serve --reasoning-format`: reasoning in `reasoning_content` (automatic), or left in
// `content` between <think> and </think> as text (none), as llama-server leaves it.
enum class ReasoningFormat { automatic, none };

// How the server shapes every answer (`k3 serve --special --reasoning-format`).
struct OutputOptions {
    bool special = false;  // control tokens' text (<|reserved_token_0|>) kept in the output
    ReasoningFormat reasoning = ReasoningFormat::automatic;
};

class GenerationSink final : public runtime::TokenSink {
public:
    // `chat` (for Endpoint::chat): where the generation prompt left the model and the tools the
    // output parser should know. `group` (the OpenAI endpoints): the request's choices, of which
    // this is number `choice`; /completion answers alone into `channel`.
    GenerationSink(Endpoint endpoint, const text::Tokenizer& tokenizer, std::shared_ptr<ResponseChannel> channel,
                   ResponseIdentity identity, const GenerationParams& params, const ChatInput* chat,
                   OutputOptions output, std::shared_ptr<ChoiceGroup> group = nullptr, size_t choice = 0);
    // A chat answer in an agent API's shape: `format` writes the channel (the agent APIs show
    // reasoning as blocks of their own, whatever --reasoning-format says).
    GenerationSink(const text::Tokenizer& tokenizer, std::unique_ptr<AnswerFormat> format,
                   const GenerationParams& params, const ChatInput& chat, OutputOptions output);

    // For streams: the response head (once, by choice 0) and, for chat, the opening chunk (role
    // "assistant").
    void begin();
    bool on_token(const runtime::SampledToken& sampled) override;
    void on_finish(const runtime::GenerationSummary& summary) override;

private:
    void emit(text::OutputDelta delta);
    // --reasoning-format none: the reasoning moved into the content, between <think> tags.
    void fold_reasoning(text::OutputDelta& delta);
    void send_event(const Json& event);
    Json chat_chunk(Json delta, const Json& finish_reason) const;
    Json completion_chunk(const std::string& text, const Json& finish_reason) const;
    std::string finish_reason(const runtime::GenerationSummary& summary) const;
    Json choice_entry(const runtime::GenerationSummary& summary) const;  // the whole answer's choice
    void finish_llama_completion(const runtime::GenerationSummary& summary);
    // The log-probabilities of the tokens from `from` on, in the endpoint's shape (OpenAI chat's
    // {"content": [...]}, OpenAI completions' parallel arrays, llama.cpp's list).
    Json logprobs(size_t from) const;
    // Puts the tokens not yet streamed into a streamed event (nothing without logprobs).
    void attach_logprobs(Json& event);

    Endpoint endpoint_;
    std::shared_ptr<ResponseChannel> channel_;
    ResponseIdentity identity_;
    bool stream_;
    OutputOptions output_;
    std::shared_ptr<ChoiceGroup> group_;
    size_t choice_;
    bool in_think_ = false;  // --reasoning-format none: <think> opened, not yet closed
    text::AnswerAssembler answer_;
    std::vector<int32_t> tokens_;  // generated ids (llama.cpp's "tokens")
    std::string content_, reasoning_;  // chat: as answered (after --reasoning-format none's folding)
    Json tool_calls_ = Json::array();  // in OpenAI's form, with their ids
    const text::Tokenizer& tokenizer_;
    bool want_logprobs_;
    std::vector<runtime::SampledToken> sampled_;  // with logprobs, every generated token
    size_t logprobs_streamed_ = 0;                // of sampled_
    std::unique_ptr<AnswerFormat> format_;  // agent APIs: the answer's shape
};

}  // namespace k3::server
