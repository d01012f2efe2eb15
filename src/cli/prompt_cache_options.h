// --cache-ram, --cache-checkpoint-every and --cache-dir, registered the same way on serve, chat
// and run (issue #13). The cache's memory is counted into --mem-budget.
#pragma once

#include "runtime/engine.h"
#include "runtime/prefix_cache.h"

namespace CLI { class App; }

namespace k3::cli {

void add_prompt_cache_options(CLI::App& app, runtime::PrefixCacheOptions& options);
// After parsing: the cache's budget is working memory the residency split must leave free.
void count_prompt_cache(const runtime::PrefixCacheOptions& cache, runtime::ResidencyOptions& residency);

}  // namespace k3::cli
