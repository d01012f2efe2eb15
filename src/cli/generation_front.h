// What `k3 run` and `k3 chat` share: the model and its chat template, the generation options,
// and the streamed display of one answer (reasoning apart, the answer, tool calls as JSON,
// tokens/s).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/matmul.h"  // Numerics
#include "runtime/engine.h"
#include "runtime/scheduler.h"
#include "text/chat_prompt.h"
#include "text/chat_template.h"
#include "text/answer_assembler.h"
#include "text/tokenizer.h"

namespace CLI { class App; }

namespace k3::cli {

// Options common to both commands, registered on a CLI11 app by add_generation_options.
struct GenerationOptions {
    std::string model_path;
    int64_t n_predict = 512;  // < 0: until end of generation or the context is full
    runtime::SamplingDefaults sampling;  // the same defaults as k3 serve's
    int threads = 0;
    int64_t ctx_size = 0;          // 0: the model's context length
    std::vector<std::string> stop_strings;
    // Chat: a system message, template variables (--chat-template-kwargs), --no-thinking.
    std::string system;
    std::string template_kwargs_json;
    bool no_thinking = false;
    bool hide_reasoning = false;
    bool show_special = false;  // control tokens' text in the output (K3's markup is parsed anyway)
    bool quiet = false;         // no tokens/s line
    runtime::ResidencyOptions residency;  // --mem-budget, --expert-stats, --warmup-experts
    kernels::Numerics numerics = kernels::Numerics::native;  // --exact
    runtime::PrefixCacheOptions cache;    // --cache-ram, --cache-checkpoint-every, --cache-dir
};

void add_generation_options(CLI::App& app, GenerationOptions& options);

// One slot of the scheduler the server uses, with the options' context length and prompt cache.
runtime::SchedulerOptions scheduler_options(const GenerationOptions& options);

// A request for `prompt` with the options' sampling (a fresh seed for --seed -1), ending at the
// vocabulary's end-of-generation ids; -n is kept within the context left after the prompt, as
// k3 serve's -n is.
runtime::GenerationRequest generation_request(const GenerationOptions& options, const text::Tokenizer& tokenizer,
                                              std::vector<int32_t> prompt, int64_t ctx_size);

// The model's chat template (its tokenizer.chat_template; the bundled Kimi-K3 one when it has
// none, with a note naming `model_path`) with the variables a front end passes besides the messages.
class ChatPrompter {
public:
    ChatPrompter(std::optional<std::string> chat_template, const std::string& model_path,
                 const text::Tokenizer& tokenizer, const GenerationOptions& options);

    // The prompt for `messages` (a JSON array) followed by the assistant's generation prompt;
    // special-token text inside the messages stays plain text.
    text::ChatPrompt render(const nlohmann::ordered_json& messages) const;
    // Where messages end in `prompt`, render(messages)'s ids (text::message_boundaries): the
    // request's checkpoints, so an edited last message resumes from the message before it.
    std::vector<int64_t> message_boundaries(const nlohmann::ordered_json& messages,
                                            const std::vector<int32_t>& prompt) const;
    // Whether the generation prompt opens a think section (K3 with thinking on, the default).
    bool thinking() const { return thinking_; }
    // messages = [system (if given), user `text`].
    nlohmann::ordered_json first_messages(const std::string& text) const;

private:
    nlohmann::ordered_json variables(const nlohmann::ordered_json& messages) const;

    const text::Tokenizer& tokenizer_;
    std::optional<text::ChatTemplate> template_;
    nlohmann::ordered_json extra_;  // template variables beyond messages (thinking, ...)
    std::string bos_text_, eos_text_;
    std::string system_;
    bool thinking_ = true;
};

// Where an answer goes: the reasoning (with a header, dimmed on a terminal) and the answer.
struct AnswerStreams {
    FILE* reasoning = stderr;  // null: hidden
    bool dim_reasoning = false;
    FILE* answer = stdout;     // null: collected only (text(), assistant_message())
};

// Shows what text::AnswerAssembler makes of the sampled ids as they come: the reasoning, the
// answer, tool calls as JSON lines.
class AnswerPrinter {
public:
    AnswerPrinter(const text::Tokenizer& tokenizer, const GenerationOptions& options, AnswerStreams streams,
                  bool chat, bool starts_thinking);
    ~AnswerPrinter();

    // Shows what the id completes; false once a stop string has been reached.
    bool push(int32_t id);
    void finish();  // flushes held-back text and ends the reasoning block or line

    const std::string& text() const { return answer_.text(); }  // everything shown, as generated
    // Reasoning came and nothing else: generation stopped before the answer began.
    bool only_reasoning() const;
    // {"role":"assistant","content":..., "reasoning_content":..., "tool_calls":[...]} (chat).
    nlohmann::ordered_json assistant_message() const;

private:
    void show(const text::OutputDelta& delta);
    void show_reasoning(const std::string& piece);
    void show_answer(const std::string& piece);
    void show_tool_call(const text::ToolCall& call);
    void end_reasoning();

    text::AnswerAssembler answer_;
    AnswerStreams streams_;
    nlohmann::ordered_json tool_calls_ = nlohmann::ordered_json::array();
    bool in_reasoning_block_ = false;
    bool answer_ends_with_newline_ = true;
};

// On stderr, when the answer was cut inside the reasoning (so nothing reached stdout): why, and
// how to leave room for the answer.
void notice_cut_reasoning(const AnswerPrinter& printer, const runtime::GenerationSummary& summary,
                          const GenerationOptions& options);

// Seconds spent on the prompt (from taking a slot to the first token) and on the rest.
double prompt_seconds(const runtime::GenerationSummary& summary);
double generation_seconds(const runtime::GenerationSummary& summary);

// "prompt: 12 tokens, 345.6 t/s | generation: 32 tokens, 120.3 t/s" on stderr.
void print_generation_stats(const runtime::GenerationSummary& summary);

// Comma-separated token ids, e.g. "1,2,3"; k3::Error naming the bad item.
std::vector<int32_t> parse_token_ids(const std::string& text, int32_t n_vocab);

}  // namespace k3::cli
