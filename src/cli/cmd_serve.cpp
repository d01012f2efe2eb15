// `k3 serve`: the OpenAI-compatible HTTP server (src/server/).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/prompt_cache_options.h"
#include "cli/residency_options.h"
#include "server/serve.h"

namespace k3::cli {

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
    app.add_option("--api-key", options.api_key, "require 'Authorization: Bearer KEY' (all but /health)");
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
    add_residency_options(app, options.residency);
    add_prompt_cache_options(app, options.cache, options.residency);
    app.add_option("--slot-save-path", options.slot_save_path,
                   "folder for POST /slots/ID?action=save|restore (default: slot files off)")
        ->type_name("DIR")
        ->check(CLI::ExistingDirectory);
    CLI11_PARSE(app, argc, argv);
    return server::serve(options);
}

}  // namespace k3::cli
