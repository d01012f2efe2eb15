#include "cli/generation_front.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "cli/numerics_option.h"
#include "cli/options.h"
#include "cli/prompt_cache_options.h"
#include "cli/residency_options.h"
#include "text/bundled_template.h"
#include "util/error.h"

namespace k3::cli {

using nlohmann::ordered_json;

namespace {

text::AnswerOptions answer_options(const GenerationOptions& options, bool chat, bool starts_thinking) {
    text::AnswerOptions answer;
    answer.stop_strings = options.stop_strings;
    answer.show_special = options.show_special;
    if (chat) answer.chat = starts_thinking ? text::OutputStart::Think : text::OutputStart::Response;
    return answer;
}

}  // namespace

void add_generation_options(CLI::App& app, GenerationOptions& options) {
    app.add_option("-m,--model", options.model_path, "model GGUF (first part of a split model)")->required();
    app.add_option("-n,--n-predict", options.n_predict,
                   "most tokens per answer (-1: until the end of the turn or a full context)")
        ->check(token_limit());
    add_sampling_options(app, options.sampling);
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

runtime::SchedulerOptions scheduler_options(const GenerationOptions& options) {
    runtime::SchedulerOptions scheduler;
    scheduler.n_slots = 1;
    scheduler.ctx_size = options.ctx_size;
    scheduler.cache = options.cache;
    return scheduler;
}

runtime::GenerationRequest generation_request(const GenerationOptions& options, const text::Tokenizer& tokenizer,
                                              std::vector<int32_t> prompt, int64_t ctx_size) {
    runtime::GenerationRequest request;
    request.params.sampling = runtime::default_sampling(options.sampling);
    request.params.max_tokens = options.n_predict;
    if (options.n_predict > 0 && ctx_size > int64_t(prompt.size()))
        request.params.max_tokens = std::min(options.n_predict, ctx_size - int64_t(prompt.size()));
    request.params.stop_ids = tokenizer.end_of_generation_ids();
    request.prompt = std::move(prompt);
    return request;
}

ChatPrompter::ChatPrompter(std::optional<std::string> chat_template, const std::string& model_path,
                           const text::Tokenizer& tokenizer, const GenerationOptions& options)
    : tokenizer_(tokenizer), system_(options.system) {
    std::optional<std::string> source = std::move(chat_template);
    if (!source) {
        std::fprintf(stderr, "note: %s has no tokenizer.chat_template; using the bundled Kimi-K3 template\n",
                     model_path.c_str());
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

ordered_json ChatPrompter::variables(const ordered_json& messages) const {
    return text::chat_variables(messages, ordered_json::array(), /*add_generation_prompt=*/true, bos_text_, eos_text_,
                                extra_);
}

text::ChatPrompt ChatPrompter::render(const ordered_json& messages) const {
    return text::render_chat_prompt(*template_, tokenizer_, variables(messages));
}

std::vector<int64_t> ChatPrompter::message_boundaries(const ordered_json& messages,
                                                      const std::vector<int32_t>& prompt) const {
    return text::message_boundaries(*template_, tokenizer_, variables(messages), prompt);
}

ordered_json ChatPrompter::first_messages(const std::string& text) const {
    ordered_json messages = ordered_json::array();
    if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
    messages.push_back({{"role", "user"}, {"content", text}});
    return messages;
}

AnswerPrinter::AnswerPrinter(const text::Tokenizer& tokenizer, const GenerationOptions& options,
                             AnswerStreams streams, bool chat, bool starts_thinking)
    : answer_(tokenizer, answer_options(options, chat, starts_thinking)), streams_(streams) {}

AnswerPrinter::~AnswerPrinter() = default;

bool AnswerPrinter::push(int32_t id) {
    show(answer_.push(id));
    return !answer_.stopped();
}

void AnswerPrinter::finish() {
    show(answer_.finish());
    end_reasoning();
    if (!streams_.answer) return;
    if (!answer_ends_with_newline_) std::fputc('\n', streams_.answer);
    std::fflush(streams_.answer);
}

bool AnswerPrinter::only_reasoning() const {
    const text::ParsedOutput& parsed = answer_.parsed();
    return !parsed.reasoning.empty() && parsed.content.empty() && parsed.tool_calls.empty();
}

void AnswerPrinter::show(const text::OutputDelta& delta) {
    if (!delta.reasoning.empty()) show_reasoning(delta.reasoning);
    if (!delta.content.empty()) show_answer(delta.content);
    for (const text::ToolCall& call : delta.tool_calls) show_tool_call(call);
}

void AnswerPrinter::show_reasoning(const std::string& piece) {
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
    const text::ParsedOutput& parsed = answer_.parsed();
    ordered_json message = {{"role", "assistant"}, {"content", parsed.content}};
    if (!parsed.reasoning.empty()) message["reasoning_content"] = parsed.reasoning;
    if (!tool_calls_.empty()) message["tool_calls"] = tool_calls_;
    return message;
}

void notice_cut_reasoning(const AnswerPrinter& printer, const runtime::GenerationSummary& summary,
                          const GenerationOptions& options) {
    if (!printer.only_reasoning() || summary.outcome != runtime::JobOutcome::finished) return;
    if (summary.finish == runtime::FinishReason::length)
        std::fprintf(stderr,
                     "note: generation stopped inside the reasoning after %lld tokens (-n %lld), so there is no answer; "
                     "allow more tokens (-n N, or -n -1 for no limit) or answer without reasoning (--no-thinking)\n",
                     static_cast<long long>(summary.n_generated), static_cast<long long>(options.n_predict));
    else if (summary.finish == runtime::FinishReason::context)
        std::fprintf(stderr,
                     "note: the context filled up inside the reasoning, so there is no answer; give a larger context "
                     "(-c N) or answer without reasoning (--no-thinking)\n");
}

double prompt_seconds(const runtime::GenerationSummary& summary) {
    const double end = summary.n_generated > 0 ? summary.first_token_ms : summary.total_ms;
    return std::max(0.0, end - summary.queue_ms) / 1000.0;
}

double generation_seconds(const runtime::GenerationSummary& summary) {
    return summary.n_generated > 0 ? std::max(0.0, summary.total_ms - summary.first_token_ms) / 1000.0 : 0.0;
}

void print_generation_stats(const runtime::GenerationSummary& summary) {
    const int64_t fed = summary.n_prompt - summary.n_cached;
    const double prompt_s = prompt_seconds(summary), generation_s = generation_seconds(summary);
    // The first token comes with the prompt; the rate counts the ones after it.
    const int64_t after_first = std::max<int64_t>(0, summary.n_generated - 1);
    std::fprintf(stderr, "prompt: %lld tokens", static_cast<long long>(fed));
    if (summary.n_cached > 0) std::fprintf(stderr, " (+%lld cached)", static_cast<long long>(summary.n_cached));
    std::fprintf(stderr, ", %.1f t/s | generation: %lld tokens, %.1f t/s\n", prompt_s > 0 ? double(fed) / prompt_s : 0.0,
                 static_cast<long long>(summary.n_generated),
                 generation_s > 0 ? double(after_first) / generation_s : 0.0);
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
