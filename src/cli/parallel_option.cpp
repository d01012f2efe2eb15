#include "cli/parallel_option.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/options.h"
#include "util/error.h"

namespace k3::cli {

void add_parallel_options(CLI::App& app, ParallelOptions& options) {
    app.add_option_function<std::string>(
           "--parallel-mode", [&options](const std::string& mode) { options.tensor_parallel = mode == "tp"; },
           "none: this process alone; tp: one rank of an MPI job (mpirun -np N k3 ...): the KDA/MLA heads, every "
           "other matrix's rows and the routed experts split across the ranks; the results one process computes")
        ->check(CLI::IsMember({"none", "tp"}))
        ->default_str("none");
    app.add_option("--parallel-timeout", options.start_timeout_s,
                   "seconds a rank waits at start for the other ranks to load the model")
        ->check(CLI::PositiveNumber);
}

void refuse_in_parallel_job(const ParallelOptions& options, bool given, const char* option) {
    if (options.tensor_parallel && given) throw UsageError(std::string(option) + ": not with --parallel-mode tp");
}

std::unique_ptr<parallel::Collective> start_parallel(const ParallelOptions& options, runtime::EngineOptions& engine) {
    if (!options.tensor_parallel) return nullptr;
    std::unique_ptr<parallel::Collective> collective = parallel::start_mpi();
    if (collective->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
        throw Error("rank " + std::to_string(collective->rank()) + ": cannot redirect stdout to /dev/null");
    engine.collective = collective.get();
    engine.parallel_start_timeout = std::chrono::milliseconds(int64_t(options.start_timeout_s * 1000));
    return collective;
}

}  // namespace k3::cli
