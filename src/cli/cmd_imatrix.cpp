// `k3 imatrix -m MODEL -f TEXT [-o imatrix.gguf]`: the importance matrix llama-imatrix computes
// (cli/imatrix_collector.h) over the text in chunks of --ctx-size tokens, each evaluated from an
// empty context, written in llama.cpp's GGUF imatrix format (convert/imatrix_file.h).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/imatrix_collector.h"
#include "cli/numerics_option.h"
#include "cli/options.h"
#include "cli/residency_options.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "text/tokenizer.h"
#include "util/error.h"

namespace k3::cli {

int run_imatrix(int argc, char** argv) {
    CLI::App app{"Compute an importance matrix (the mean squared activations entering every weight matrix, per "
                 "expert for the routed experts) as llama-imatrix does, for k3 quantize --imatrix / llama-quantize."};
    show_defaults(app);
    std::string model_path, text_path, output_path = "imatrix.gguf";
    int64_t chunks = -1, ctx_size = 512;
    int threads = 0;
    app.add_option("-m,--model", model_path, "model GGUF (first part of a split model)")->required();
    app.add_option("-f,--file", text_path, "the calibration text")->required()->check(CLI::ExistingFile);
    app.add_option("-o,--output", output_path, "the imatrix file to write (llama.cpp's GGUF format)");
    app.add_option("--chunks", chunks, "use at most N chunks of the text (-1: all)")->check(at_least(-1));
    app.add_option("-c,--ctx-size", ctx_size, "tokens per chunk")->check(at_least(1));
    app.add_option("-t,--threads", threads, "worker threads (0: all hardware threads)")->check(thread_count());
    runtime::EngineOptions options;
    add_numerics_option(app, options.numerics);
    add_residency_options(app, options.residency);
    OutputFlags output;
    add_output_flags(app, output);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;

    // The collector needs the engine's own mapping of the weights, so it is made after the load.
    std::unique_ptr<ImatrixCollector> collector;
    options.observe = [&collector](const kernels::MatrixView& w, const float* x, int64_t x_stride, int64_t n) {
        if (collector) collector->observe(w, x, x_stride, n);
    };
    options.n_threads = threads;
    auto engine = runtime::Engine::load(model_path, options);
    collector = std::make_unique<ImatrixCollector>(engine->tensors());

    std::ifstream text_file(text_path, std::ios::binary);
    std::stringstream text;
    text << text_file.rdbuf();
    const std::vector<int32_t> tokens = engine->tokenizer().encode(text.str());
    int64_t n_chunks = int64_t(tokens.size()) / ctx_size;
    if (chunks >= 0) n_chunks = std::min(n_chunks, chunks);
    if (n_chunks == 0)
        throw Error(text_path + " has " + std::to_string(tokens.size()) + " tokens, fewer than one chunk of --ctx-size " +
                    std::to_string(ctx_size));
    if (!output.force && std::ifstream(output_path).good())
        throw Error(output_path + " exists (pass --force to replace it)");

    auto session = engine->new_session();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < n_chunks; ++c) {
        session->reset();
        session->eval(std::span(tokens).subspan(size_t(c * ctx_size), size_t(ctx_size)));
        if (!output.quiet) {
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::fprintf(stderr, "\rchunk %lld/%lld  %.1f s, %.0f tokens/s", static_cast<long long>(c + 1),
                         static_cast<long long>(n_chunks), seconds, double((c + 1) * ctx_size) / seconds);
        }
    }
    if (!output.quiet) std::fputc('\n', stderr);
    convert::write_imatrix(output_path, collector->result({text_path}, uint32_t(n_chunks), uint32_t(ctx_size)));
    if (!output.quiet) std::printf("wrote %s\n", output_path.c_str());
    return 0;
}

}  // namespace k3::cli
