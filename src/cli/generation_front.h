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

#include "runtime/engine.h"
#include "runtime/generation.h"
#include "text/chat_prompt.h"
#include "text/chat_template.h"
#include "text/output_parser.h"
#include "text/stop_strings.h"
#include "text/tokenizer.h"

namespace CLI { class App; }
namespace k3::gguf { class GgufFile; }

namespace k3::cli {

// Options common to both commands, registered on a CLI11 app by add_generation_options.
struct GenerationOptions {
    std::string model_path;
    int64_t n_predict = 512;  // < 0: until end of generation or the context is full
    float temperature = 0.8f;
    float top_p = 0.95f;
    int32_t top_k = 40;
    float min_p = 0.05f;
    std::optional<uint64_t> seed;  // unset: a random seed
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

// Sampling and limits; generation stops at the vocabulary's end-of-generation ids.
runtime::GenerationParams generation_params(const GenerationOptions& options, const text::Tokenizer& tokenizer);

// The model's chat template (tokenizer.chat_template; the bundled Kimi-K3 one when the file has
// none) with the variables a front end passes besides the messages.
class ChatPrompter {
public:
    ChatPrompter(const gguf::GgufFile& file, const text::Tokenizer& tokenizer, const GenerationOptions& options);

    // The prompt for `messages` (a JSON array) followed by the assistant's generation prompt;
    // special-token text inside the messages stays plain text.
    text::ChatPrompt render(const nlohmann::ordered_json& messages) const;
    // Whether the generation prompt opens a think section (K3 with thinking on, the default).
    bool thinking() const { return thinking_; }
    // messages = [system (if given), user `text`].
    nlohmann::ordered_json first_messages(const std::string& text) const;

private:
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

// Turns sampled ids into what the user sees, as they come: well-formed UTF-8, cut at the
// first stop string, split into reasoning, answer and tool calls when `chat` is set.
class AnswerPrinter {
public:
    AnswerPrinter(const text::Tokenizer& tokenizer, const GenerationOptions& options, AnswerStreams streams,
                  bool chat, bool starts_thinking);
    ~AnswerPrinter();

    // Shows what the id completes; false once a stop string has been reached.
    bool push(int32_t id);
    void finish();  // flushes held-back text and ends the reasoning block or line

    const std::string& text() const { return text_; }  // everything shown, as generated
    // Reasoning came and nothing else: generation stopped before the answer began.
    bool only_reasoning() const { return !reasoning_.empty() && answer_.empty() && tool_calls_.empty(); }
    // {"role":"assistant","content":..., "reasoning_content":..., "tool_calls":[...]} (chat).
    nlohmann::ordered_json assistant_message() const;

private:
    void show(const std::string& piece);
    void show_parsed(const text::OutputDelta& delta);
    void show_reasoning(const std::string& piece);
    void show_answer(const std::string& piece);
    void show_tool_call(const text::ToolCall& call);
    void end_reasoning();

    const text::Tokenizer& tokenizer_;
    text::StreamingDetokenizer detokenizer_;
    text::StopStringFilter stops_;
    AnswerStreams streams_;
    bool show_special_;
    std::optional<text::OutputParser> parser_;  // chat only
    std::string text_;
    std::string reasoning_, answer_;
    nlohmann::ordered_json tool_calls_ = nlohmann::ordered_json::array();
    bool in_reasoning_block_ = false;
    bool answer_ends_with_newline_ = true;
};

// On stderr, when the answer was cut inside the reasoning (so nothing reached stdout): why, and
// how to leave room for the answer.
void notice_cut_reasoning(const AnswerPrinter& printer, const runtime::GenerationResult& result,
                          const GenerationOptions& options);

// "prompt: 12 tokens, 345.6 t/s | generation: 32 tokens, 120.3 t/s" on stderr.
void print_generation_stats(const runtime::GenerationStats& stats);

// Comma-separated token ids, e.g. "1,2,3"; k3::Error naming the bad item.
std::vector<int32_t> parse_token_ids(const std::string& text, int32_t n_vocab);

}  // namespace k3::cli
