#include "server/serve.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "runtime/engine.h"
#include "runtime/scheduler.h"
#include "server/api.h"
#include "text/tokenizer.h"
#include "util/error.h"

namespace k3::server {

namespace {

std::string read_option_file(const char* option, const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw Error(std::string(option) + ": cannot read '" + path + "'");
    return std::string(std::istreambuf_iterator<char>(file), {});
}

}  // namespace

int serve(const ServeOptions& options) {
    runtime::EngineOptions engine_options;
    engine_options.n_threads = options.threads;
    engine_options.residency = options.residency;
    engine_options.numerics = options.numerics;
    engine_options.collective = options.collective;
    engine_options.parallel_start_timeout = options.parallel_start_timeout;
    engine_options.followers = true;
    const auto engine = runtime::Engine::load(options.model_path, engine_options);
    if (engine->follower()) return engine->follow(), 0;
    const text::Tokenizer& tokenizer = engine->tokenizer();

    runtime::SchedulerOptions scheduler_options;
    scheduler_options.n_slots = options.parallel;
    scheduler_options.ctx_size = options.ctx_size;
    scheduler_options.queue_capacity = options.queue_size;
    scheduler_options.prefill_chunk = options.prefill_chunk;
    scheduler_options.cache = options.cache;
    // Joined explicitly before the HTTP server goes: its thread may still answer into channels
    // whose notifiers post to the server's I/O context.
    std::optional<runtime::Scheduler> scheduler(std::in_place, *engine, scheduler_options);

    ApiOptions api_options;
    api_options.model_name = options.model_name;
    api_options.api_key = options.api_key;
    api_options.sampling_defaults = options.sampling;
    api_options.slot_save_path = options.slot_save_path;
    if (!options.grammar_file.empty()) api_options.default_grammar = read_option_file("--grammar-file", options.grammar_file);
    if (!options.chat_template_file.empty())
        api_options.chat_template = read_option_file("--chat-template-file", options.chat_template_file);
    api_options.output = options.output;
    api_options.max_n = options.max_n;
    api_options.model_path = options.model_path;
    api_options.build_info = options.build_info;
    if (api_options.model_name.empty())
        api_options.model_name = std::filesystem::path(options.model_path).filename().string();
    Api api(*engine, tokenizer, *scheduler, api_options);
    HttpServer server(options.http, [&api](const HttpRequest& request) { return api.handle(request); });

    std::printf("k3 serve: listening on http://%s:%u (%d parallel, context %lld)\n", options.http.host.c_str(),
                unsigned(server.port()), options.parallel, (long long)scheduler->ctx_size());
    std::fflush(stdout);
    server.run(/*handle_signals=*/true, [&scheduler] { scheduler->shutdown(); });
    scheduler.reset();
    std::fprintf(stderr, "k3 serve: stopped\n");
    return 0;
}

}  // namespace k3::server
