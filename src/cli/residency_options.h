// --mem-budget, --expert-stats, --warmup-experts and --no-mmap, registered the same way on run, chat,
// serve, eval and bench (issue #7).
#pragma once

#include "runtime/engine.h"

namespace CLI { class App; }

namespace k3::cli {

void add_residency_options(CLI::App& app, runtime::ResidencyOptions& options);

}  // namespace k3::cli
