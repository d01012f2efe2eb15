#include "cli/options.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <thread>
#include <vector>

#include "util/byte_size.h"

namespace k3::cli {
namespace {

// A llama.cpp option people carry over: renamed to k3's spelling when the command has it,
// otherwise refused with what to do instead (CLI11 would read "-ngl 99" as "-n gl").
struct ForeignSpelling {
    std::string_view spelling;
    std::string_view k3_name;  // empty: k3 has no counterpart
    std::string_view refusal;
};

constexpr ForeignSpelling kForeignSpellings[] = {
    {"-ngl", "", "is llama.cpp's GPU offload (--n-gpu-layers); k3 runs on the CPU, so leave it out"},
    {"--n-gpu-layers", "", "is llama.cpp's GPU offload; k3 runs on the CPU, so leave it out"},
    {"--gpu-layers", "", "is llama.cpp's GPU offload; k3 runs on the CPU, so leave it out"},
    {"-fa", "", "is llama.cpp's flash-attention switch (--flash-attn); k3 has no such switch, so leave it out"},
    {"--flash-attn", "", "is llama.cpp's flash-attention switch; k3 has no such switch, so leave it out"},
    {"-cnv", "", "is llama.cpp's conversation mode (--conversation); `k3 chat` always converses, so leave it out"},
    {"--conversation", "", "is llama.cpp's conversation mode; `k3 chat` always converses, so leave it out"},
    {"-sys", "--system", "is llama.cpp's system prompt (k3 run and k3 chat take it as --system)"},
    {"--system-prompt", "--system", "is llama.cpp's system prompt (k3 run and k3 chat take it as --system)"},
    {"-hf", "", "is llama.cpp's Hugging Face download (--hf-repo); k3 reads a local GGUF: download it, then give -m FILE"},
    {"--hf-repo", "", "is llama.cpp's Hugging Face download; k3 reads a local GGUF: download it, then give -m FILE"},
    {"--jinja", "--jinja", "is llama.cpp's chat-template switch; this command renders no chat template"},
    {"-ot", "", "is llama.cpp's tensor placement override (--override-tensor); k3 runs on the CPU and "
                "--mem-budget decides which experts stay in memory"},
    {"--override-tensor", "", "is llama.cpp's tensor placement override; k3 runs on the CPU and --mem-budget "
                              "decides which experts stay in memory"},
};

const ForeignSpelling* find_foreign_spelling(std::string_view arg) {
    for (const ForeignSpelling& f : kForeignSpellings)
        if (arg == f.spelling || (arg.starts_with(f.spelling) && arg.size() > f.spelling.size() && arg[f.spelling.size()] == '='))
            return &f;
    return nullptr;
}

std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

// A validator of one number: `accepts` decides, `requirement` says what is wanted.
CLI::Validator number_check(std::function<bool(double)> accepts, std::string requirement) {
    return CLI::Validator(
        [accepts = std::move(accepts), requirement](std::string& text) -> std::string {
            double value = 0;
            size_t used = 0;
            try {
                value = std::stod(text, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used == 0 || used != text.size()) return "'" + text + "' is not a number";
            return accepts(value) ? std::string() : requirement + ", not " + text;
        },
        "");
}

unsigned hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace

int report_usage_error(const std::string& program, const std::string& message) {
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", program.c_str(), message.c_str(), program.c_str());
    return kUsageExitCode;
}

void show_defaults(CLI::App& app) { app.option_defaults()->always_capture_default(); }

std::optional<int> parse_options(CLI::App& app, int argc, char** argv) {
    if (app.get_name().empty()) app.name(argv[0]);
    std::vector<std::string> args;
    bool after_separator = false;  // "--": the rest are positional arguments
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--") after_separator = true;
        const ForeignSpelling* foreign = after_separator ? nullptr : find_foreign_spelling(arg);
        if (foreign) {
            if (foreign->k3_name.empty() || !app.get_option_no_throw(std::string(foreign->k3_name)))
                return report_usage_error(app.get_name(), std::string(foreign->spelling) + " " + std::string(foreign->refusal));
            arg = std::string(foreign->k3_name) + arg.substr(foreign->spelling.size());
        }
        args.push_back(std::move(arg));
    }
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    try {
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help
        return report_usage_error(app.get_name(), e.what());
    }
    return std::nullopt;
}

CLI::Validator in_range(double low, double high) {
    return number_check([=](double v) { return v >= low && v <= high; },
                        "must be in [" + number_text(low) + ", " + number_text(high) + "]");
}

CLI::Validator at_least(double low) {
    return number_check([=](double v) { return v >= low; }, "must be at least " + number_text(low));
}

CLI::Validator token_limit() {
    return number_check([](double v) { return v == -1 || v >= 1; }, "must be -1 (no limit) or at least 1");
}

void add_sampling_options(CLI::App& app, runtime::SamplingDefaults& sampling) {
    app.add_option("--temp", sampling.temperature, "temperature (0: greedy)")->check(at_least(0));
    app.add_option("--top-p", sampling.top_p, "nucleus sampling: smallest set of tokens with this much probability (1: off)")
        ->check(in_range(0, 1));
    app.add_option("--top-k", sampling.top_k, "sample among the K most likely tokens (0: off)")->check(at_least(0));
    app.add_option("--min-p", sampling.min_p, "drop tokens less likely than this fraction of the top one (0: off)")
        ->check(in_range(0, 1));
    app.add_option("--seed", sampling.seed, "random seed (-1: a fresh random one for each answer)")->check(at_least(-1));
}

CLI::Validator byte_size() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            try {
                util::parse_byte_size(text);
            } catch (const Error& e) {
                return e.what();
            }
            return {};
        },
        "SIZE");
}

CLI::Validator thread_count() {
    const double most = 4.0 * hardware_threads();
    return number_check([=](double v) { return v >= 0 && v <= most; },
                        "must be in [0, " + number_text(most) + "] (0: all " + std::to_string(hardware_threads()) +
                            " hardware threads; at most 4 per hardware thread)");
}

void accept_jinja_flag(CLI::App& app) {
    app.add_flag("--jinja")->description(
        "no effect: k3 always renders the chat template with Jinja (accepted for llama.cpp command lines)");
}

void add_output_flags(CLI::App& app, OutputFlags& flags) {
    app.add_flag("--force", flags.force, "replace the output if it exists (otherwise an existing output is an error)");
    app.add_flag("-q,--quiet", flags.quiet, "print nothing but errors");
}

void check_context_size(int64_t requested, int64_t model_context) {
    if (requested > model_context)
        throw UsageError("--ctx-size " + std::to_string(requested) + " is larger than the model's context length (" +
                         std::to_string(model_context) + ")");
}

}  // namespace k3::cli
