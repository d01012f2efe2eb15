// `k3 serve`: the OpenAI-compatible HTTP server (src/server/).
#include <CLI/CLI.hpp>

#include <cctype>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/numerics_option.h"
#include "cli/options.h"
#include "cli/parallel_option.h"
#include "cli/prompt_cache_options.h"
#include "cli/residency_options.h"
#include "gguf/gguf_file.h"
#include "model/hparams.h"
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
    show_defaults(app);
    server::ServeOptions options;
    server::HttpServerOptions& http = options.http;
    app.add_option("-m,--model", options.model_path, "model GGUF (first part of a split model)")->required();
    app.add_option("--host", http.host, "address to listen on (127.0.0.1: this machine only)");
    app.add_option("--port", http.port, "TCP port (0: any free port, printed at start)")->check(in_range(0, 65535));
    app.add_option("--parallel", options.parallel, "sequences decoded together")->check(at_least(1));
    app.add_option("-c,--ctx-size", options.ctx_size, "tokens per sequence (0: the model's context length)")
        ->check(at_least(0));
    app.add_option("--queue-size", options.queue_size, "requests waiting for a slot before 503")->check(at_least(0));
    app.add_option("--prefill-chunk", options.prefill_chunk, "prompt tokens fed per sequence per step")
        ->check(at_least(1));
    app.add_option("-t,--threads", options.threads, "worker threads (0: all hardware threads)")->check(thread_count());
    std::string api_key_file;
    auto* api_key = app.add_option("--api-key", options.api_key,
                                   "require 'Authorization: Bearer KEY' or 'x-api-key: KEY' (all but /health; empty: none); also $K3_API_KEY")
                        ->envname("K3_API_KEY");
    app.add_option("--api-key-file", api_key_file, "read the API key from the first line of this file (not shown by ps)")
        ->excludes(api_key);
    app.add_option("--alias", options.model_name, "model name in responses (empty: the file name)");
    app.add_option("--max-body", http.max_body_bytes, "largest request body in bytes")->check(at_least(1));
    app.add_option("--max-header", http.max_header_bytes, "largest request head in bytes")->check(at_least(1));
    app.add_option("--max-connections", http.max_connections, "open connections before 503")->check(at_least(1));
    app.add_option("--timeout", http.request_timeout_s, "seconds to receive a request or send a piece")
        ->check(at_least(1));
    app.add_option("--idle-timeout", http.idle_timeout_s, "seconds a kept-alive connection may idle")->check(at_least(1));
    app.add_option("--grammar-file", options.grammar_file, "GBNF grammar for requests that give no grammar or schema")
        ->check(CLI::ExistingFile);
    // Defaults for the sampling fields a request leaves out.
    server::SamplingDefaults& sampling = options.sampling;
    add_sampling_options(app, sampling);
    app.add_option("-n,--n-predict", sampling.max_tokens, "tokens to generate when a request gives no limit (unset: the rest of the context)")
        ->check(at_least(1));
    add_residency_options(app, options.residency);
    add_numerics_option(app, options.numerics);
    add_prompt_cache_options(app, options.cache, options.residency);
    app.add_option("--slot-save-path", options.slot_save_path,
                   "folder for POST /slots/ID?action=save|restore (empty: slot files off)")
        ->type_name("DIR")
        ->check(CLI::ExistingDirectory);
    app.add_option("--chat-template-file", options.chat_template_file,
                   "Jinja chat template used instead of the model's (checked at start)")
        ->check(CLI::ExistingFile);
    app.add_flag("--special", options.output.special,
                 "keep control tokens such as <|reserved_token_0|> in answers (default: left out)");
    std::string reasoning_format = "auto";
    app.add_option("--reasoning-format", reasoning_format,
                   "auto: reasoning in reasoning_content; none: left in content between <think> tags")
        ->check(CLI::IsMember({"auto", "none"}));
    app.add_option("--max-n", options.max_n, "most choices one request may ask for ('n'; beyond it 400)")
        ->check(at_least(1));
    app.add_option("--cors", http.cors_origins,
                   "let browser pages from this origin call the API (repeat or comma-separate; *: any); "
                   "without it no CORS headers are sent, so browsers refuse other sites' pages")
        ->delimiter(',')
        ->type_name("ORIGIN");
    std::string log_format = "text";
    app.add_option("--log-format", log_format,
                   "one line per request on stderr (method, path, status, tokens, ms; never prompts or keys); "
                   "off: none")
        ->check(CLI::IsMember({"text", "json", "off"}));
    accept_jinja_flag(app);
    ParallelOptions parallel_options;
    add_parallel_options(app, parallel_options);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    refuse_in_parallel_job(parallel_options, !options.cache.dir.empty(), "--cache-dir");
    refuse_in_parallel_job(parallel_options, !options.slot_save_path.empty(), "--slot-save-path");
    if (!api_key_file.empty()) options.api_key = read_api_key(api_key_file);
    options.output.reasoning = reasoning_format == "none" ? server::ReasoningFormat::none : server::ReasoningFormat::automatic;
    http.log_format = log_format == "json"  ? server::RequestLogFormat::json
                      : log_format == "off" ? server::RequestLogFormat::off
                                            : server::RequestLogFormat::text;
    if (options.ctx_size > 0) {
        const auto file = gguf::GgufFile::open(options.model_path);
        check_context_size(options.ctx_size, model::HParams::from_gguf(*file).n_ctx_train);
    }
    options.build_info = std::string("k3 ") + K3_VERSION;
    runtime::EngineOptions parallel_engine;
    const auto collective = start_parallel(parallel_options, parallel_engine);
    options.collective = parallel_engine.collective;
    options.parallel_start_timeout = parallel_engine.parallel_start_timeout;
    return server::serve(options);
}

}  // namespace k3::cli
