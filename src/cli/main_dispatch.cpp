#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "util/error.h"
#include "util/interruption.h"

namespace k3::cli {
namespace {

struct Subcommand {
    const char* name;
    const char* summary;
    int (*run)(int argc, char** argv);
};

// Keep in the order of `k3 --help`.
constexpr Subcommand kSubcommands[] = {
    {"info", "print a model's hyper-parameters, layer map, tensor types and sizes", run_info},
    {"run", "generate a completion for one prompt (chat template, reasoning apart; --raw)", run_run},
    {"chat", "interactive chat through the model's chat template (reads stdin when piped)", run_chat},
    {"eval", "logits for a token sequence (float32 file) and a greedy continuation", run_eval},
    {"bench", "prompt and generation tokens/s, peak memory, fraction of the bandwidth bound", run_bench},
    {"tokenize", "print the token ids of a text as JSON", run_tokenize},
    {"detokenize", "print the text of token ids", run_detokenize},
    {"template", "render a chat template (a model's, or any file with JSON variables)", run_template},
    {"serve", "serve a model over an OpenAI-compatible HTTP API (continuous batching)", run_serve},
    {"convert", "convert a Hugging Face K3 checkpoint (safetensors) to GGUF", run_convert},
    {"quantize", "re-encode a GGUF's tensors (F32, F16, BF16, Q8_0, MXFP4, K-quants, IQ types; --imatrix)", run_quantize},
    {"imatrix", "compute an importance matrix over a text (llama-imatrix's file format)", run_imatrix},
    {"mock", "write a random-initialised K3-shaped model (--preset tiny|bench, shape options)", run_mock},
};

void print_help() {
    std::printf(
        "k3 %s - an inference engine for Kimi-K3 models\n\n"
        "usage: k3 SUBCOMMAND [OPTIONS]   (k3 SUBCOMMAND --help for its options)\n\n"
        "subcommands:\n",
        K3_VERSION);
    for (const Subcommand& s : kSubcommands) std::printf("  %-12s %s\n", s.name, s.summary);
}

}  // namespace

int run_main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        print_help();
        return argc < 2 ? 2 : 0;
    }
    if (!std::strcmp(argv[1], "--version")) {
        std::printf("k3 %s\n", K3_VERSION);
        return 0;
    }
    for (const Subcommand& s : kSubcommands) {
        if (std::strcmp(argv[1], s.name) != 0) continue;
        std::string program = std::string("k3 ") + s.name;
        argv[1] = program.data();
        try {
            return s.run(argc - 1, argv + 1);
        } catch (const util::Interrupted& e) {
            std::fprintf(stderr, "k3 %s: %s\n", s.name, e.what());
            return e.exit_code();
        } catch (const UsageError& e) {
            return report_usage_error(program, e.what());
        } catch (const Error& e) {
            std::fprintf(stderr, "k3 %s: error: %s\n", s.name, e.what());
        } catch (const std::exception& e) {
            std::fprintf(stderr, "k3 %s: internal error: %s\n", s.name, e.what());
        }
        return 1;
    }
    std::fprintf(stderr, "k3: unknown subcommand '%s' (see k3 --help)\n", argv[1]);
    return 2;
}

}  // namespace k3::cli
