#include "cli/prompt_cache_options.h"

#include <CLI/CLI.hpp>

#include "util/byte_size.h"
#include "util/error.h"

namespace k3::cli {

void add_prompt_cache_options(CLI::App& app, runtime::PrefixCacheOptions& options,
                              runtime::ResidencyOptions& residency) {
    app.add_option_function<std::string>(
           "--cache-ram",
           [&options, &residency](const std::string& text) {
               try {
                   options.ram_bytes = residency.prompt_cache_bytes = util::parse_byte_size(text);
               } catch (const Error& e) {
                   throw CLI::ValidationError("--cache-ram", e.what());
               }
           },
           "memory for the prompt cache's states, counted into --mem-budget; least recently used states go "
           "first (default: what the model and working memory leave of --mem-budget, at most 8G as llama-server, "
           "or a 16th of the budget when experts stream from disk; 8G with --mem-budget off; 0: keep none)")
        ->type_name("SIZE");
    app.add_option("--cache-checkpoint-every", options.checkpoint_every,
                   "tokens between the prompt cache's KDA checkpoints, a multiple of 16 (default 256)")
        ->type_name("N");
    app.add_option("--cache-dir", options.dir,
                   "also keep the prompt cache's states in DIR (written atomically, found again after a restart; "
                   "files of another model are ignored)")
        ->type_name("DIR");
    app.add_option_function<std::string>(
           "--cache-disk",
           [&options](const std::string& text) {
               try {
                   options.disk_bytes = util::parse_byte_size(text);
               } catch (const Error& e) {
                   throw CLI::ValidationError("--cache-disk", e.what());
               }
           },
           "disk space for --cache-dir's files; least recently used files are deleted first (default 32G)")
        ->type_name("SIZE");
}

}  // namespace k3::cli
