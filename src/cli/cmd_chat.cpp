// `k3 chat -m MODEL`: a conversation through the model's chat template. On a terminal: line
// editing and history (libedit), slash commands, reasoning dimmed, tokens/s after each answer.
// Otherwise it reads the conversation from stdin, answers and exits. Earlier assistant turns go
// back to the template verbatim (content, reasoning_content, tool_calls), and the session's
// KDA/MLA state is reused whenever the new prompt extends the previous one.
#include <CLI/CLI.hpp>
#include <histedit.h>
#include <nlohmann/json.hpp>

#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/generation_front.h"
#include "cli/options.h"
#include "cli/parallel_option.h"
#include "util/error.h"

namespace k3::cli {

namespace {

using nlohmann::ordered_json;

constexpr const char* kCommandHelp =
    "  /reset       start a new conversation\n"
    "  /save FILE   write the conversation as a JSON array of messages\n"
    "  /load FILE   continue a conversation saved by /save (a JSON array of messages)\n"
    "  /help        this list\n"
    "  /quit        leave (also /exit or end of input)\n"
    "  A line ending in \\ continues on the next line.\n";

std::atomic<bool> g_interrupted{false};

extern "C" void on_interrupt(int) { g_interrupted = true; }

// Ctrl-C while an answer is generated ends that answer, not the chat.
class InterruptScope {
public:
    InterruptScope() {
        g_interrupted = false;
        struct sigaction action{};
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &previous_);
    }
    ~InterruptScope() { sigaction(SIGINT, &previous_, nullptr); }
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

private:
    struct sigaction previous_{};
};

// libedit's line editor with an in-memory history.
class LineEditor {
public:
    explicit LineEditor(const char* program) : editor_(el_init(program, stdin, stdout, stderr)), history_(history_init()) {
        if (!editor_ || !history_) throw Error("cannot initialise the line editor (libedit)");
        HistEvent event;
        history(history_, &event, H_SETSIZE, 1000);
        el_set(editor_, EL_PROMPT, &LineEditor::prompt);
        el_set(editor_, EL_EDITOR, "emacs");
        el_set(editor_, EL_HIST, history, history_);
        el_set(editor_, EL_SIGNAL, 1);
        el_source(editor_, nullptr);  // the user's ~/.editrc, if any
    }
    ~LineEditor() {
        history_end(history_);
        el_end(editor_);
    }
    LineEditor(const LineEditor&) = delete;
    LineEditor& operator=(const LineEditor&) = delete;

    // One line without its newline; nullopt at end of input (Ctrl-D).
    std::optional<std::string> read_line() {
        int count = 0;
        const char* line = el_gets(editor_, &count);
        if (!line || count <= 0) return std::nullopt;
        std::string text(line, size_t(count));
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        if (!text.empty()) {
            HistEvent event;
            history(history_, &event, H_ENTER, text.c_str());
        }
        return text;
    }

private:
    static const char* prompt(EditLine*) { return "> "; }
    EditLine* editor_;
    History* history_;
};

ordered_json load_messages(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path);
    ordered_json messages;
    try {
        messages = ordered_json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(path + ": not valid JSON: " + e.what());
    }
    if (!messages.is_array()) throw Error(path + ": expected a JSON array of messages");
    for (const ordered_json& message : messages)
        if (!message.is_object() || !message.contains("role") || !message["role"].is_string())
            throw Error(path + ": every message needs a \"role\" string");
    return messages;
}

void save_messages(const ordered_json& messages, const std::string& path) {
    std::ofstream out(path, std::ios::binary);
    out << messages.dump(2) << '\n';
    if (!out) throw Error("cannot write " + path);
}

class Chat {
public:
    Chat(const GenerationOptions& options, bool interactive, std::unique_ptr<runtime::Engine> engine)
        : options_(options), interactive_(interactive), engine_(std::move(engine)),
          prompter_(engine_->info().chat_template, engine_->info().path, engine_->tokenizer(), options),
          scheduler_(*engine_, checked_scheduler_options(options)) {
        reset();
    }

    void reset() {
        messages_ = prompter_.first_messages("");
        messages_.erase(messages_.size() - 1);  // keep only the system message, if any
    }

    // Handles one input line: a /command or a user message. Returns false to quit.
    bool handle_line(const std::string& line) {
        if (line.empty()) return true;
        if (line[0] != '/') {
            messages_.push_back({{"role", "user"}, {"content", line}});
            try {
                answer();
            } catch (const Error&) {
                messages_.erase(messages_.size() - 1);  // unanswered: as if never sent
                throw;
            }
            return true;
        }
        const size_t space = line.find(' ');
        const std::string command = line.substr(0, space);
        const std::string argument = space == std::string::npos ? "" : line.substr(space + 1);
        if (command == "/quit" || command == "/exit") return false;
        if (command == "/help") {
            std::fputs(kCommandHelp, stderr);
        } else if (command == "/reset") {
            reset();
            std::fputs("(new conversation)\n", stderr);
        } else if ((command == "/save" || command == "/load") && argument.empty()) {
            throw Error("usage: " + command + " FILE (" +
                        (command == "/save" ? "writes the conversation as a JSON array of messages)"
                                            : "continues a conversation saved by /save)"));
        } else if (command == "/save") {
            save_messages(messages_, argument);
            std::fprintf(stderr, "(saved %zu messages to %s)\n", messages_.size(), argument.c_str());
        } else if (command == "/load") {
            messages_ = load_messages(argument);
            std::fprintf(stderr, "(loaded %zu messages from %s)\n", messages_.size(), argument.c_str());
        } else {
            throw Error("unknown command '" + line + "'; /help lists the commands");
        }
        return true;
    }

    // Answers the conversation as it stands (its last message is usually the user's).
    void answer() {
        const std::vector<int32_t> ids = prompter_.render(messages_).ids;
        const int64_t n_ctx = scheduler_.ctx_size();
        if (int64_t(ids.size()) >= n_ctx)
            throw Error("the conversation has " + std::to_string(ids.size()) + " tokens and the context holds " +
                        std::to_string(n_ctx) + ": /reset starts a new conversation" +
                        (n_ctx < engine_->n_ctx_train()
                             ? " (or restart with a larger -c, up to " + std::to_string(engine_->n_ctx_train()) + ")"
                             : ""));
        AnswerStreams streams;
        const bool hide = options_.hide_reasoning;
        streams.reasoning = hide ? nullptr : interactive_ ? stdout : stderr;
        streams.dim_reasoning = isatty(fileno(interactive_ ? stdout : stderr));
        AnswerPrinter printer(engine_->tokenizer(), options_, streams, /*chat=*/true, prompter_.thinking());
        runtime::GenerationRequest request = generation_request(options_, engine_->tokenizer(), ids, n_ctx);
        request.boundaries = prompter_.message_boundaries(messages_, request.prompt);
        runtime::GenerationResult result;
        {
            InterruptScope interrupt_scope;
            result = runtime::generate(
                scheduler_, std::move(request),
                [&](const runtime::SampledToken& token) { return printer.push(token.id); },
                [] { return g_interrupted.load(); });
        }
        printer.finish();
        if (result.summary.outcome == runtime::JobOutcome::error)
            throw Error("generation failed: " + result.summary.error);
        // What was typed while the answer streamed (a Ctrl-D included) would otherwise reach the
        // next prompt as text.
        if (interactive_) tcflush(STDIN_FILENO, TCIFLUSH);
        messages_.push_back(printer.assistant_message());
        notice_cut_reasoning(printer, result.summary, options_);
        if (result.summary.outcome == runtime::JobOutcome::finished && result.summary.finish == runtime::FinishReason::context)
            std::fprintf(stderr, "note: the context (%lld tokens) is full and the answer was cut; /reset starts a new conversation\n",
                         static_cast<long long>(n_ctx));
        if (!options_.quiet) print_generation_stats(result.summary);
    }

    void set_messages(ordered_json messages) { messages_ = std::move(messages); }

private:
    runtime::SchedulerOptions checked_scheduler_options(const GenerationOptions& options) const {
        check_context_size(options.ctx_size, engine_->n_ctx_train());
        return scheduler_options(options);
    }

    const GenerationOptions& options_;
    bool interactive_;
    std::unique_ptr<runtime::Engine> engine_;
    ChatPrompter prompter_;
    runtime::Scheduler scheduler_;  // its prompt cache resumes each turn from the last one's checkpoints
    ordered_json messages_;
};

int chat_interactively(Chat& chat, const char* program) {
    LineEditor editor(program);
    std::fputs("k3 chat: type a message, /help for commands, Ctrl-D to leave.\n", stderr);
    for (;;) {
        std::optional<std::string> line = editor.read_line();
        while (line && !line->empty() && line->back() == '\\') {  // continued on the next line
            line->back() = '\n';
            std::optional<std::string> more = editor.read_line();
            if (!more) break;
            *line += *more;
        }
        if (!line) return 0;
        try {
            if (!chat.handle_line(*line)) return 0;
        } catch (const Error& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
        }
    }
}

// Piped input: a JSON array of messages is answered once; otherwise every line is a user
// message (or a /command) answered in turn. Any error ends the run with status 1.
int chat_from_stdin(Chat& chat) {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    const std::string input = buffer.str();
    const size_t first = input.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && input[first] == '[') {
        ordered_json messages;
        try {
            messages = ordered_json::parse(input);
        } catch (const nlohmann::json::exception& e) {
            throw Error("stdin: not a valid JSON array of messages: " + std::string(e.what()));
        }
        if (!messages.is_array()) throw Error("stdin: expected a JSON array of messages");
        chat.set_messages(std::move(messages));
        chat.answer();
        return 0;
    }
    std::istringstream lines(input);
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!chat.handle_line(line)) break;
    }
    return 0;
}

}  // namespace

int run_chat(int argc, char** argv) {
    CLI::App app{"Chat with a model through its chat template.\n"
                 "On a terminal: line editing and history; /reset, /save FILE, /load FILE, /help, /quit.\n"
                 "When stdin is not a terminal it is read whole: a JSON array of messages is answered once "
                 "(the answer on stdout, reasoning on stderr); anything else is taken line by line, each line "
                 "a user message (or a /command) answered in turn. Then k3 chat exits.",
                 "k3 chat"};
    show_defaults(app);
    GenerationOptions options;
    options.n_predict = -1;  // an answer ends at the end of its turn
    add_generation_options(app, options);
    ParallelOptions parallel_options;
    add_parallel_options(app, parallel_options);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    refuse_in_parallel_job(parallel_options, !options.cache.dir.empty(), "--cache-dir");

    runtime::EngineOptions engine_options;
    engine_options.n_threads = options.threads;
    engine_options.residency = options.residency;
    engine_options.numerics = options.numerics;
    engine_options.followers = true;
    const auto collective = start_parallel(parallel_options, engine_options);
    auto engine = runtime::Engine::load(options.model_path, engine_options);
    if (engine->follower()) return engine->follow(), 0;
    const bool interactive = isatty(STDIN_FILENO);
    Chat chat(options, interactive, std::move(engine));
    return interactive ? chat_interactively(chat, argv[0]) : chat_from_stdin(chat);
}

}  // namespace k3::cli
