// `k3 run -m MODEL -p TEXT`: one prompt in, one streamed completion out. By default the text is
// a user message rendered through the model's chat template, and the answer is split into
// reasoning (stderr), content (stdout) and tool calls (JSON lines on stdout); --raw completes the
// text itself.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/generation_front.h"
#include "cli/parallel_option.h"
#include "gguf/gguf_file.h"
#include "runtime/session_file.h"
#include "server/generation_sink.h"
#include "util/error.h"

namespace k3::cli {

namespace {

using nlohmann::ordered_json;

struct RunOptions {
    GenerationOptions generation;
    std::string prompt, prompt_file, token_ids;
    bool raw = false;
    bool print_prompt = false;
    bool json = false;
    std::string prompt_cache;  // --prompt-cache FILE
};

std::string read_prompt_text(const RunOptions& options) {
    if (!options.prompt_file.empty() && options.prompt_file != "-") {
        std::ifstream in(options.prompt_file, std::ios::binary);
        if (!in) throw Error("cannot read prompt file " + options.prompt_file);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    if (!options.prompt.empty()) return options.prompt;
    if (options.prompt_file.empty() && isatty(STDIN_FILENO))
        throw Error("no prompt: give -p TEXT, --file FILE or --tokens IDS, or pipe the prompt on stdin");
    std::ostringstream text;
    text << std::cin.rdbuf();
    if (text.str().empty()) throw Error("no prompt: stdin was empty");
    return text.str();
}

// The prompt as ids, and as the text that was tokenized (empty for --tokens); a chat prompt's
// message boundaries (after --system) for the prompt cache.
struct Prompt {
    std::string text;
    std::vector<int32_t> ids;
    std::vector<int64_t> boundaries;
};

// `prompter` is null for a raw prompt.
Prompt build_prompt(const RunOptions& options, const ChatPrompter* prompter, const text::Tokenizer& tokenizer) {
    Prompt prompt;
    if (!options.token_ids.empty()) {
        prompt.ids = parse_token_ids(options.token_ids, tokenizer.n_vocab());
        return prompt;
    }
    const std::string text = read_prompt_text(options);
    if (prompter) {
        const ordered_json messages = prompter->first_messages(text);
        text::ChatPrompt rendered = prompter->render(messages);
        prompt.text = std::move(rendered.text);
        prompt.ids = std::move(rendered.ids);
        prompt.boundaries = prompter->message_boundaries(messages, prompt.ids);
        return prompt;
    }
    // A raw prompt may spell control tokens, e.g. "[BOS]".
    prompt.text = text;
    prompt.ids = tokenizer.encode(prompt.text, /*parse_special=*/true);
    return prompt;
}

ordered_json result_json(const Prompt& prompt, const runtime::GenerationResult& result, const AnswerPrinter& printer,
                         bool chat) {
    const runtime::GenerationSummary& summary = result.summary;
    ordered_json out;
    out["prompt_tokens"] = prompt.ids;
    out["tokens"] = result.tokens;
    out["text"] = printer.text();
    if (chat) {
        const ordered_json message = printer.assistant_message();
        out["content"] = message["content"];
        out["reasoning_content"] = message.value("reasoning_content", "");
        out["tool_calls"] = message.value("tool_calls", ordered_json::array());
    }
    out["finish_reason"] = runtime::finish_reason_name(summary.finish);
    out["usage"] = server::usage_json(summary);
    out["timings"] = {{"prompt_tokens", summary.n_prompt - summary.n_cached},
                      {"prompt_seconds", prompt_seconds(summary)},
                      {"generated_tokens", summary.n_generated},
                      {"generation_seconds", generation_seconds(summary)}};
    return out;
}

}  // namespace

int run_run(int argc, char** argv) {
    CLI::App app{"Generate a completion for one prompt, streamed as it is sampled.\n"
                 "The prompt is a user message rendered through the model's chat template (reasoning on "
                 "stderr, the answer on stdout, tool calls as JSON lines), or with --raw plain text to continue.",
                 "k3 run"};
    show_defaults(app);
    RunOptions options;
    add_generation_options(app, options.generation);
    CLI::Option* prompt_option = app.add_option("-p,--prompt", options.prompt, "the prompt text");
    CLI::Option* file_option = app.add_option("-f,--file", options.prompt_file, "read the prompt from FILE (- for stdin)");
    CLI::Option* tokens_option =
        app.add_option("--tokens", options.token_ids, "the prompt as comma-separated token ids (implies --raw)");
    prompt_option->excludes(file_option)->excludes(tokens_option);
    file_option->excludes(tokens_option);
    app.add_flag("--raw", options.raw, "complete the text as it is, without the chat template (control tokens are parsed)");
    app.add_flag("--print-prompt", options.print_prompt, "print the rendered prompt and exit without generating");
    app.add_option("--prompt-cache", options.prompt_cache,
                   "resume from the state saved in FILE when the prompt starts with its tokens, and save the "
                   "prompt's state there (a file of another model, or a damaged one, is ignored with a warning)")
        ->type_name("FILE");
    app.add_flag("--json", options.json,
                 "print one JSON object at the end (prompt_tokens, tokens, text, content, reasoning_content, "
                 "tool_calls, finish_reason, timings) instead of streaming");
    ParallelOptions parallel_options;
    add_parallel_options(app, parallel_options);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    if (!options.token_ids.empty()) options.raw = true;
    refuse_in_parallel_job(parallel_options, !options.prompt_cache.empty(), "--prompt-cache");
    refuse_in_parallel_job(parallel_options, !options.generation.cache.dir.empty(), "--cache-dir");

    if (options.print_prompt) {
        const auto file = gguf::GgufFile::open(options.generation.model_path);
        const text::Tokenizer tokenizer = text::Tokenizer::from_gguf(*file);
        std::optional<ChatPrompter> prompter;
        if (!options.raw)
            prompter.emplace(file->get_string("tokenizer.chat_template"), file->path(), tokenizer, options.generation);
        const Prompt prompt = build_prompt(options, prompter ? &*prompter : nullptr, tokenizer);
        if (!prompt.text.empty()) std::fwrite(prompt.text.data(), 1, prompt.text.size(), stdout);
        else std::fputs(tokenizer.decode(prompt.ids).c_str(), stdout);
        return 0;
    }

    runtime::EngineOptions engine_options;
    engine_options.n_threads = options.generation.threads;
    engine_options.residency = options.generation.residency;
    engine_options.numerics = options.generation.numerics;
    engine_options.followers = true;
    const auto collective = start_parallel(parallel_options, engine_options);
    const auto engine = runtime::Engine::load(options.generation.model_path, engine_options);
    if (engine->follower()) return engine->follow(), 0;
    check_context_size(options.generation.ctx_size, engine->n_ctx_train());
    const text::Tokenizer& tokenizer = engine->tokenizer();
    std::optional<ChatPrompter> prompter;
    if (!options.raw) prompter.emplace(engine->info().chat_template, engine->info().path, tokenizer, options.generation);
    const Prompt prompt = build_prompt(options, prompter ? &*prompter : nullptr, tokenizer);
    const bool chat = prompter.has_value();

    AnswerStreams streams;
    streams.reasoning = options.json || options.generation.hide_reasoning ? nullptr : stderr;
    streams.dim_reasoning = isatty(STDERR_FILENO);
    streams.answer = options.json ? nullptr : stdout;
    AnswerPrinter printer(tokenizer, options.generation, streams, chat, chat && prompter->thinking());
    runtime::Scheduler scheduler(*engine, scheduler_options(options.generation));
    runtime::PrefixCache& cache = scheduler.cache();
    if (!options.prompt_cache.empty() && std::filesystem::exists(options.prompt_cache)) {
        try {
            cache.insert(std::make_shared<const runtime::SessionState>(
                runtime::read_session_file(options.prompt_cache, *engine, engine->identity())));
        } catch (const Error& e) {
            std::fprintf(stderr, "k3: warning: --prompt-cache: ignoring %s\n", e.what());
        }
    }
    runtime::GenerationRequest request = generation_request(options.generation, tokenizer, prompt.ids, scheduler.ctx_size());
    request.boundaries = prompt.boundaries;
    runtime::GenerationResult result = runtime::generate(
        scheduler, std::move(request), [&](const runtime::SampledToken& token) { return printer.push(token.id); });
    printer.finish();
    if (result.summary.outcome == runtime::JobOutcome::error) throw Error("generation failed: " + result.summary.error);
    if (chat) notice_cut_reasoning(printer, result.summary, options.generation);
    // The prompt's last checkpoint (as far as a later prompt starting with this one can resume).
    if (const runtime::SessionSnapshot state = options.prompt_cache.empty() ? nullptr : cache.lookup(prompt.ids))
        runtime::write_session_file(options.prompt_cache, *state, engine->identity());
    if (options.json) {
        const ordered_json out = result_json(prompt, result, printer, chat);
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    if (!options.generation.quiet) print_generation_stats(result.summary);
    return 0;
}

}  // namespace k3::cli
