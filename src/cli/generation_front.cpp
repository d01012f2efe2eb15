#include "cli/generation_front.h"

#include <CLI/CLI.hpp>

#include <random>

#include "cli/numerics_option.h"
#include "cli/options.h"
#include "cli/prompt_cache_options.h"
#include "cli/residency_options.h"
#include "gguf/gguf_file.h"
#include "text/bundled_template.h"
#include "util/error.h"

namespace k3::cli {

using nlohmann::ordered_json;

void add_generation_options(CLI::App& app, GenerationOptions& options) {
    app.add_option("-m,--model", options.model_path, "model GGUF (first part of a split model)")->required();
    app.add_option("-n,--n-predict", options.n_predict,
                   "most tokens per answer (-1: until the end of the turn or a full context)")
        ->check(token_limit());
    app.add_option("--temp", options.temperature, "temperature (0: greedy)")->check(at_least(0));
    app.add_option("--top-p", options.top_p, "nucleus sampling: smallest set of tokens with this much probability (1: off)")
        ->check(in_range(0, 1));
    app.add_option("--top-k", options.top_k, "sample among the K most likely tokens (0: off)")->check(at_least(0));
    app.add_option("--min-p", options.min_p, "drop tokens less likely than this fraction of the top one (0: off)")
        ->check(in_range(0, 1));
    app.add_option("--seed", options.seed, "random seed (default: a random one)");
    app.add_option("-t,--threads", options.threads, "worker threads (0: all hardware threads)")->check(thread_count());
    app.add_option("-c,--ctx-size", options.ctx_size, "context length in tokens (0: the model's)")->check(at_least(0));
    add_residency_options(app, options.residency);
    add_numerics_option(app, options.numerics);
    add_prompt_cache_options(app, options.cache, options.residency);
    app.add_option("--stop", options.stop_strings, "stop when the output contains STR (repeatable; not shown)")
        ->type_name("STR")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--system", options.system, "a system message before the user's");
    app.add_option("--chat-template-kwargs", options.template_kwargs_json,
                   "JSON object of extra chat-template variables, e.g. '{\"thinking_effort\":\"low\"}'");
    app.add_flag("--no-thinking", options.no_thinking, "answer without reasoning (template variable thinking=false)");
    app.add_flag("--no-reasoning", options.hide_reasoning, "do not show the reasoning");
    app.add_flag("--special", options.show_special, "show control tokens such as <|reserved_token_0|> in the output");
    app.add_flag("-q,--quiet", options.quiet, "no tokens/s line on stderr");
    accept_jinja_flag(app);
}

runtime::GenerationParams generation_params(const GenerationOptions& options, const text::Tokenizer& tokenizer) {
    runtime::GenerationParams params;
    params.sampling.temperature = options.temperature;
    params.sampling.top_p = options.top_p;
    params.sampling.top_k = options.top_k;
    params.sampling.min_p = options.min_p;
    params.sampling.seed = options.seed ? *options.seed : std::random_device{}();
    params.max_tokens = options.n_predict;
    params.n_ctx = options.ctx_size;
    params.stop_ids = tokenizer.end_of_generation_ids();
    return params;
}

ChatPrompter::ChatPrompter(const gguf::GgufFile& file, const text::Tokenizer& tokenizer,
                           const GenerationOptions& options)
    : tokenizer_(tokenizer), system_(options.system) {
    std::optional<std::string> source = file.get_string("tokenizer.chat_template");
    if (!source) {
        std::fprintf(stderr, "note: %s has no tokenizer.chat_template; using the bundled Kimi-K3 template\n",
                     file.path().c_str());
        source = std::string(text::bundled_kimi_k3_template());
    }
    template_.emplace(*source);
    if (!options.template_kwargs_json.empty()) {
        try {
            extra_ = ordered_json::parse(options.template_kwargs_json);
        } catch (const nlohmann::json::exception& e) {
            throw Error("--chat-template-kwargs: not valid JSON: " + std::string(e.what()));
        }
        if (!extra_.is_object()) throw Error("--chat-template-kwargs: expected a JSON object");
    } else {
        extra_ = ordered_json::object();
    }
    if (options.no_thinking) extra_["thinking"] = false;
    // K3's template thinks unless told otherwise (k3-architecture.md §11.1).
    if (extra_.contains("thinking")) thinking_ = extra_["thinking"].is_boolean() ? extra_["thinking"].get<bool>() : true;
    const text::Vocabulary& vocab = tokenizer.vocabulary();
    if (vocab.bos_id) bos_text_ = std::string(tokenizer.token_bytes(*vocab.bos_id));
    if (vocab.eos_id) eos_text_ = std::string(tokenizer.token_bytes(*vocab.eos_id));
}

text::ChatPrompt ChatPrompter::render(const ordered_json& messages) const {
    return text::render_chat_prompt(*template_, tokenizer_, text::chat_variables(messages, ordered_json::array(), /*add_generation_prompt=*/true,
                                                  bos_text_, eos_text_, extra_));
}

ordered_json ChatPrompter::first_messages(const std::string& text) const {
    ordered_json messages = ordered_json::array();
    if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
    messages.push_back({{"role", "user"}, {"content", text}});
    return messages;
}

AnswerPrinter::AnswerPrinter(const text::Tokenizer& tokenizer, const GenerationOptions& options,
                             AnswerStreams streams, bool chat, bool starts_thinking)
    : tokenizer_(tokenizer),
      detokenizer_(tokenizer),
      stops_(options.stop_strings),
      streams_(streams),
      show_special_(options.show_special) {
    if (chat) parser_.emplace(starts_thinking ? text::OutputStart::Think : text::OutputStart::Response);
}

AnswerPrinter::~AnswerPrinter() = default;

bool AnswerPrinter::push(int32_t id) {
    // An end-of-generation id only ends the answer; its text is not part of it.
    if (tokenizer_.is_end_of_generation(id)) return true;
    if (tokenizer_.is_special(id) && !show_special_ && !(parser_ && text::is_markup_marker(tokenizer_.token_bytes(id))))
        return true;
    show(stops_.push(detokenizer_.push(id)));
    return !stops_.stopped();
}

void AnswerPrinter::finish() {
    show(stops_.push(detokenizer_.finish()));
    show(stops_.finish());
    if (parser_) show_parsed(parser_->finish());
    end_reasoning();
    if (!streams_.answer) return;
    if (!answer_ends_with_newline_) std::fputc('\n', streams_.answer);
    std::fflush(streams_.answer);
}

void AnswerPrinter::show(const std::string& piece) {
    if (piece.empty()) return;
    text_ += piece;
    if (parser_) show_parsed(parser_->push(piece));
    else show_answer(piece);
}

void AnswerPrinter::show_parsed(const text::OutputDelta& delta) {
    if (!delta.reasoning.empty()) show_reasoning(delta.reasoning);
    if (!delta.content.empty()) show_answer(delta.content);
    for (const text::ToolCall& call : delta.tool_calls) show_tool_call(call);
}

void AnswerPrinter::show_reasoning(const std::string& piece) {
    reasoning_ += piece;
    if (!streams_.reasoning) return;
    if (!in_reasoning_block_) {
        in_reasoning_block_ = true;
        std::fputs(streams_.dim_reasoning ? "\x1b[2m[reasoning]\n" : "[reasoning]\n", streams_.reasoning);
    }
    std::fwrite(piece.data(), 1, piece.size(), streams_.reasoning);
    std::fflush(streams_.reasoning);
}

void AnswerPrinter::end_reasoning() {
    if (!in_reasoning_block_) return;
    in_reasoning_block_ = false;
    std::fputs(streams_.dim_reasoning ? "\x1b[0m\n" : "\n", streams_.reasoning);
    if (streams_.reasoning == streams_.answer) std::fputc('\n', streams_.answer);
    std::fflush(streams_.reasoning);
}

void AnswerPrinter::show_answer(const std::string& piece) {
    end_reasoning();
    answer_ += piece;
    if (!streams_.answer) return;
    std::fwrite(piece.data(), 1, piece.size(), streams_.answer);
    answer_ends_with_newline_ = piece.back() == '\n';
    std::fflush(streams_.answer);
}

// OpenAI's form, which the chat template reads back; the id lets tool results refer to it.
void AnswerPrinter::show_tool_call(const text::ToolCall& call) {
    end_reasoning();
    ordered_json json_call = {{"id", "call_" + std::to_string(tool_calls_.size())},
                              {"type", "function"},
                              {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
    tool_calls_.push_back(json_call);
    if (!streams_.answer) return;
    if (!answer_ends_with_newline_) std::fputc('\n', streams_.answer);
    std::fprintf(streams_.answer, "%s\n", json_call.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    answer_ends_with_newline_ = true;
    std::fflush(streams_.answer);
}

ordered_json AnswerPrinter::assistant_message() const {
    ordered_json message = {{"role", "assistant"}, {"content", answer_}};
    if (!reasoning_.empty()) message["reasoning_content"] = reasoning_;
    if (!tool_calls_.empty()) message["tool_calls"] = tool_calls_;
    return message;
}

void notice_cut_reasoning(const AnswerPrinter& printer, const runtime::GenerationResult& result,
                          const GenerationOptions& options) {
    if (!printer.only_reasoning()) return;
    if (result.finish == runtime::FinishReason::length)
        std::fprintf(stderr,
                     "note: generation stopped inside the reasoning after %lld tokens (-n %lld), so there is no answer; "
                     "allow more tokens (-n N, or -n -1 for no limit) or answer without reasoning (--no-thinking)\n",
                     static_cast<long long>(result.tokens.size()), static_cast<long long>(options.n_predict));
    else if (result.finish == runtime::FinishReason::context)
        std::fprintf(stderr,
                     "note: the context filled up inside the reasoning, so there is no answer; give a larger context "
                     "(-c N) or answer without reasoning (--no-thinking)\n");
}

void print_generation_stats(const runtime::GenerationStats& stats) {
    std::fprintf(stderr, "prompt: %lld tokens", static_cast<long long>(stats.prompt_tokens));
    if (stats.reused_tokens > 0) std::fprintf(stderr, " (+%lld cached)", static_cast<long long>(stats.reused_tokens));
    std::fprintf(stderr, ", %.1f t/s | generation: %lld tokens, %.1f t/s\n", stats.prompt_tokens_per_second(),
                 static_cast<long long>(stats.generated_tokens), stats.generated_tokens_per_second());
}

std::vector<int32_t> parse_token_ids(const std::string& text, int32_t n_vocab) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(pos, end - pos);
        size_t used = 0;
        long long value = -1;
        try {
            value = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || value < 0 || value >= n_vocab)
            throw Error("--tokens: '" + item + "' is not a token id below " + std::to_string(n_vocab));
        ids.push_back(int32_t(value));
        pos = end + 1;
    }
    return ids;
}

}  // namespace k3::cli
