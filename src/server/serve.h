// `k3 serve` as a function: load the model, start the scheduler and the HTTP server, serve until
// SIGINT/SIGTERM, then stop accepting, cancel what is in flight, and return.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "kernels/matmul.h"  // Numerics
#include "runtime/engine.h"
#include "runtime/prefix_cache.h"
#include "server/generation_sink.h"
#include "server/http_server.h"
#include "server/request_parsing.h"

namespace k3::server {

struct ServeOptions {
    std::string model_path;
    std::string model_name;      // empty: the model file's name
    HttpServerOptions http;
    int parallel = 1;            // sequences decoded together
    int64_t ctx_size = 0;        // per sequence; 0: the model's context length
    size_t queue_size = 64;      // requests waiting for a slot before 503
    int64_t prefill_chunk = 512; // prompt tokens per sequence per step
    int threads = 0;             // 0: one per hardware thread
    std::string api_key;         // empty: no authentication
    std::string grammar_file;    // GBNF for requests that give no grammar or schema; empty: none
    SamplingDefaults sampling;   // for fields a request leaves out
    runtime::ResidencyOptions residency;  // memory budget and expert cache
    kernels::Numerics numerics = kernels::Numerics::native;  // --exact
    runtime::PrefixCacheOptions cache;    // the prompt cache
    std::string slot_save_path;           // folder for slot files; empty: off
    std::string chat_template_file;       // overrides the model's chat template; empty: none
    OutputOptions output;                 // --special, --reasoning-format
    int64_t max_n = 16;                   // most choices per request
    std::string build_info;               // for /props
    // A parallel job (--parallel-mode tp): rank 0 serves, the other ranks follow its passes.
    parallel::Collective* collective = nullptr;
    std::chrono::milliseconds parallel_start_timeout = std::chrono::minutes(5);
};

// Prints "k3 serve: listening on http://HOST:PORT" on stdout (flushed) once it accepts
// connections. Returns the process exit code (0 after a signal). Throws k3::Error if the model
// cannot be loaded or the address bound.
int serve(const ServeOptions& options);

}  // namespace k3::server
