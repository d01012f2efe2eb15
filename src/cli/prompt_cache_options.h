// --cache-ram, --cache-checkpoint-every, --cache-dir and --cache-disk, registered the same way on serve, chat
// and run (issue #13). The cache's memory is counted into --mem-budget.
#pragma once

#include "runtime/engine.h"
#include "runtime/prefix_cache.h"

namespace CLI { class App; }

namespace k3::cli {

// A --cache-ram given also sets residency.prompt_cache_bytes, so the budget split leaves it free.
void add_prompt_cache_options(CLI::App& app, runtime::PrefixCacheOptions& options,
                              runtime::ResidencyOptions& residency);

}  // namespace k3::cli
