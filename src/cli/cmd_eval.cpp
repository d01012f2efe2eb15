// `k3 eval`: logits for a token sequence (teacher forcing) and an optional greedy continuation,
// the parity harness against the fixtures.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/generation_front.h"
#include "cli/numerics_option.h"
#include "cli/parallel_option.h"
#include "cli/residency_options.h"
#include "model/context.h"  // KdaMode
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "util/error.h"

namespace k3::cli {

int run_eval(int argc, char** argv) {
    CLI::App app{"Evaluate a token sequence: float32 logits for every position, optional greedy continuation",
                 "k3 eval"};
    show_defaults(app);
    std::string model_path, tokens_text, logits_out, dump_dir = ".", kda = "auto";
    std::vector<std::string> dump_names;
    int greedy = 0, threads = 0;
    bool sequential = false;
    app.add_option("-m,--model", model_path, "model GGUF (first part of a split model)")->required();
    app.add_option("--tokens", tokens_text, "comma-separated token ids")->required();
    app.add_option("--logits-out", logits_out, "write float32 logits, row-major [n_tokens][n_vocab]");
    app.add_option("--greedy", greedy, "also generate N greedy tokens; print their ids as a JSON array")
        ->check(at_least(0));
    app.add_flag("--sequential", sequential, "feed one token at a time (the recurrent KDA path)");
    app.add_option("-t,--threads", threads, "worker threads (0: all hardware threads)")->check(thread_count());
    app.add_option("--dump", dump_names,
                   "write the named intermediate, named as llama.cpp's graph names it (e.g. kda_out-0, l_out-3, "
                   "ffn_moe_out-4, result_norm; 'all' for every one) to DIR/NAME.f32 as float32 [rows][cols]");
    app.add_option("--dump-dir", dump_dir, "directory for --dump files");
    app.add_option("--kda", kda, "KDA path: auto, recurrent or chunked")
        ->check(CLI::IsMember({"auto", "recurrent", "chunked"}));
    runtime::EngineOptions options;
    add_residency_options(app, options.residency);
    add_numerics_option(app, options.numerics);
    ParallelOptions parallel_options;
    add_parallel_options(app, parallel_options);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    const auto collective = start_parallel(parallel_options, options);

    options.n_threads = threads;
    options.kda_mode = kda == "recurrent" ? model::KdaMode::recurrent
                       : kda == "chunked" ? model::KdaMode::chunked
                                          : model::KdaMode::automatic;
    if (!dump_names.empty() && writes_results(collective.get())) {
        // Rows of one forward pass are appended, so a --sequential dump holds every position.
        options.dump = [dump_names, dump_dir](const std::string& name, const float* data, int64_t rows, int64_t cols) {
            bool wanted = false;
            for (const std::string& n : dump_names) wanted |= n == "all" || n == name;
            if (!wanted) return;
            const std::string path = dump_dir + "/" + name + ".f32";
            std::ofstream out(path, std::ios::binary | std::ios::app);
            out.write(reinterpret_cast<const char*>(data), std::streamsize(rows * cols * sizeof(float)));
            if (!out) throw Error("cannot write " + path);
        };
    }
    options.followers = true;
    auto engine = runtime::Engine::load(model_path, options);
    if (engine->follower()) return engine->follow(), 0;
    const std::vector<int32_t> tokens = parse_token_ids(tokens_text, engine->n_vocab());
    auto session = engine->new_session();
    const size_t V = size_t(engine->n_vocab());

    std::vector<float> logits;
    if (sequential) {
        for (int32_t token : tokens) {
            const std::vector<float> row = session->eval(std::span(&token, 1));
            logits.insert(logits.end(), row.begin(), row.end());
        }
    } else {
        logits = session->eval(tokens, /*all_logits=*/true);
    }
    if (!logits_out.empty()) {
        std::ofstream out(logits_out, std::ios::binary);
        out.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(logits.size() * sizeof(float)));
        if (!out) throw Error("cannot write " + logits_out);
    }
    if (greedy > 0) {
        std::vector<float> last(logits.end() - std::ptrdiff_t(V), logits.end());
        std::string json = "[";
        for (int i = 0; i < greedy; ++i) {
            const int32_t next = runtime::argmax(last);
            json += (i ? "," : "") + std::to_string(next);
            if (i + 1 < greedy) last = session->eval(std::span(&next, 1));
        }
        std::printf("%s]\n", json.c_str());
    }
    return 0;
}

}  // namespace k3::cli
