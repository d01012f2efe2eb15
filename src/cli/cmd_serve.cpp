// `k3 serve`: the OpenAI-compatible HTTP server (src/server/).
#include <CLI/CLI.hpp>

#include <cctype>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/numerics_option.h"
#include "cli/residency_options.h"
#include "server/serve.h"
#include "util/error.h"

namespace k3::cli {

namespace {

std::string read_api_key(const std::string& path) {
    std::ifstream in(path);
    std::string key;
    if (!in || !std::getline(in, key)) throw Error("--api-key-file " + path + ": cannot read a line from it");
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    if (key.empty()) throw Error("--api-key-file " + path + ": the first line is empty");
    return key;
}

}  // namespace

int run_serve(int argc, char** argv) {
    CLI::App app{"Serve a model over an OpenAI-compatible HTTP API with continuous batching", "k3 serve"};
    server::ServeOptions options;
    server::HttpServerOptions& http = options.http;
    app.add_option("-m,--model", options.model_path, "model GGUF (first part of a split model)")->required();
    app.add_option("--host", http.host, "address to listen on (default 127.0.0.1: this machine only)");
    app.add_option("--port", http.port, "TCP port (default 8080; 0: any free port, printed at start)");
    app.add_option("--parallel", options.parallel, "sequences decoded together (default 1)")
        ->check(CLI::PositiveNumber);
    app.add_option("-c,--ctx-size", options.ctx_size, "tokens per sequence (default: the model's context length)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--queue-size", options.queue_size, "requests waiting for a slot before 503 (default 64)");
    app.add_option("--prefill-chunk", options.prefill_chunk, "prompt tokens fed per sequence per step (default 512)")
        ->check(CLI::PositiveNumber);
    app.add_option("-t,--threads", options.threads, "worker threads (default: all hardware threads)")
        ->check(CLI::NonNegativeNumber);
    std::string api_key_file;
    auto* api_key = app.add_option("--api-key", options.api_key,
                                   "require 'Authorization: Bearer KEY' (all but /health); also $K3_API_KEY")
                        ->envname("K3_API_KEY");
    app.add_option("--api-key-file", api_key_file, "read the API key from the first line of this file (not shown by ps)")
        ->excludes(api_key);
    app.add_option("--alias", options.model_name, "model name in responses (default: the file name)");
    app.add_option("--max-body", http.max_body_bytes, "largest request body in bytes (default 8 MiB)")
        ->check(CLI::PositiveNumber);
    app.add_option("--max-header", http.max_header_bytes, "largest request head in bytes (default 16 KiB)")
        ->check(CLI::PositiveNumber);
    app.add_option("--max-connections", http.max_connections, "open connections before 503 (default 512)")
        ->check(CLI::PositiveNumber);
    app.add_option("--timeout", http.request_timeout_s, "seconds to receive a request or send a piece (default 30)")
        ->check(CLI::PositiveNumber);
    app.add_option("--idle-timeout", http.idle_timeout_s, "seconds a kept-alive connection may idle (default 60)")
        ->check(CLI::PositiveNumber);
    app.add_option("--grammar-file", options.grammar_file, "GBNF grammar for requests that give no grammar or schema")
        ->check(CLI::ExistingFile);
    // Defaults for the sampling fields a request leaves out.
    server::SamplingDefaults& sampling = options.sampling;
    app.add_option("--temp", sampling.temperature, "temperature (default: 1 for the OpenAI endpoints, 0.8 for /completion; 0: greedy)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--top-p", sampling.top_p, "nucleus sampling (default 1: off)")->check(CLI::Range(0.0, 1.0));
    app.add_option("--top-k", sampling.top_k, "keep the K most likely tokens (default 0: off)")->check(CLI::NonNegativeNumber);
    app.add_option("--min-p", sampling.min_p, "drop tokens below this fraction of the best one's probability (default 0: off)")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--seed", sampling.seed, "seed for requests that give none (default: a random one per request)");
    app.add_option("-n,--n-predict", sampling.max_tokens, "tokens to generate when a request gives no limit (default: the rest of the context)")
        ->check(CLI::PositiveNumber);
    add_residency_options(app, options.residency);
    add_numerics_option(app, options.numerics);
    CLI11_PARSE(app, argc, argv);
    if (!api_key_file.empty()) options.api_key = read_api_key(api_key_file);
    return server::serve(options);
}

}  // namespace k3::cli
