#include "cli/residency_options.h"

#include <CLI/CLI.hpp>

#include "util/byte_size.h"
#include "util/error.h"

namespace k3::cli {

void add_residency_options(CLI::App& app, runtime::ResidencyOptions& options) {
    app.add_option_function<std::string>(
           "--mem-budget",
           [&options](const std::string& text) {
               if (text == "off") {
                   options.mem_budget = 0;
                   return;
               }
               try {
                   options.mem_budget = util::parse_byte_size(text);
               } catch (const Error& e) {
                   throw CLI::ValidationError("--mem-budget", e.what());
               }
           },
           "memory k3 may use, e.g. 12G or 1.5T (0 or off: no limit). When the model is larger, every "
           "non-expert tensor stays resident and routed experts stream from disk through a cache of the rest. "
           "Default: the cgroup memory limit or available memory, whichever is smaller; what streaming copies "
           "(the trunk, the expert cache) leaves max(5%, 64 MiB) of it free")
        ->type_name("SIZE");
    app.add_option("--expert-stats", options.expert_stats_path,
                   "routing statistics for the expert cache: loaded at start when FILE exists, saved at exit")
        ->type_name("FILE");
    app.add_option_function<std::string>(
           "--warmup-experts",
           [&options](const std::string& mode) {
               options.warmup = mode == "hot" ? runtime::ExpertWarmup::hot
                                : mode == "all" ? runtime::ExpertWarmup::all
                                                : runtime::ExpertWarmup::none;
           },
           "fill the expert cache at start: hot (the experts --expert-stats ranks highest), all (layer order) "
           "or none (default: hot when statistics were loaded, else none)")
        ->check(CLI::IsMember({"hot", "all", "none"}));
    app.add_flag("--no-mmap", options.no_mmap,
                 "read a model that fits into memory at load, as one larger than --mem-budget is (every "
                 "non-expert tensor resident, every routed expert in the expert cache; past the page cache), "
                 "instead of mapping the file; faster where file-mapped pages read slowly (some VMs)");
}

}  // namespace k3::cli
