// --parallel-mode and --parallel-timeout, registered the same way on run, chat, serve, eval and
// bench (issue #17).
#pragma once

#include <memory>

#include "parallel/collective.h"
#include "runtime/engine.h"

namespace CLI { class App; }

namespace k3::cli {

struct ParallelOptions {
    bool tensor_parallel = false;  // --parallel-mode tp
    double start_timeout_s = 300;  // --parallel-timeout
};

void add_parallel_options(CLI::App& app, ParallelOptions& options);

// The job this process is a rank of under --parallel-mode tp (null otherwise), set into
// `engine`. Ranks other than 0 send stdout to /dev/null: every rank computes the same results and
// rank 0 prints them; errors still reach stderr from every rank.
std::unique_ptr<parallel::Collective> start_parallel(const ParallelOptions& options, runtime::EngineOptions& engine);

// A usage error for `option` (when given) under --parallel-mode tp: session files hold one rank's
// share of the heads, so only a job of the same ranks could use them, and rank 0 alone reads them.
void refuse_in_parallel_job(const ParallelOptions& options, bool given, const char* option);

// Whether this process writes the command's results: alone, or rank 0 of a job.
inline bool writes_results(const parallel::Collective* collective) { return !collective || collective->rank() == 0; }

}  // namespace k3::cli
