// What every subcommand's option handling shares: one exit status and message form for a
// usage error, value checks with plain messages, every default shown by --help, and
// llama.cpp's common spellings understood or refused by name.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "runtime/sampler.h"
#include "util/error.h"

namespace k3::cli {

// The exit status of every usage error (bad option, bad value, missing argument).
inline constexpr int kUsageExitCode = 2;

// A bad option value found after parsing, e.g. -c larger than the model's context: run_main
// prints it as a usage error and exits with kUsageExitCode.
class UsageError : public Error {
public:
    using Error::Error;
};

// Prints "PROGRAM: error: MESSAGE (see PROGRAM --help)" on stderr; returns kUsageExitCode.
int report_usage_error(const std::string& program, const std::string& message);

// A CLI11 app whose --help shows each option's default; add options after this.
void show_defaults(CLI::App& app);

// Parses argv into `app`. nullopt: go on; otherwise the exit status to return (0 after --help;
// kUsageExitCode for a usage error, already printed as "k3 NAME: error: ...").
std::optional<int> parse_options(CLI::App& app, int argc, char** argv);

// Value checks: "must be in [0, 1]", "must be at least 0", ...
CLI::Validator in_range(double low, double high);
CLI::Validator at_least(double low);
// -n: -1 (no limit) or at least 1.
CLI::Validator token_limit();
// A byte size such as 50G or 1.5T (util/byte_size.h).
CLI::Validator byte_size();
// -t: 0 (all hardware threads) up to a few threads per hardware thread; more only contend.
CLI::Validator thread_count();

// --temp, --top-p, --top-k, --min-p, --seed, the same for run, chat and serve.
void add_sampling_options(CLI::App& app, runtime::SamplingDefaults& sampling);

// --jinja, accepted where a chat template is rendered (k3 always renders it with Jinja).
void accept_jinja_flag(CLI::App& app);

// convert, quantize and mock: --force and -q, registered the same way on each.
struct OutputFlags {
    bool force = false;  // replace an existing output
    bool quiet = false;  // errors only
};
void add_output_flags(CLI::App& app, OutputFlags& flags);

// -c/--ctx-size against the model's context length (0: the model's); UsageError when larger.
void check_context_size(int64_t requested, int64_t model_context);

}  // namespace k3::cli
