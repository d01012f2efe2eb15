// The processes of one parallel job (issue #17): every rank runs the same forward passes in
// lockstep, each computing its share of every matrix product, and exchanges the results through
// these collectives. Single-process k3 has none (a null Collective*); mpi_collective.h is the one
// implementation, on OpenMPI. A rank that fails leaves the job by exiting non-zero, and mpirun then
// ends every other rank: nothing here waits for a rank that is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace k3::parallel {

// Rows [first, first + count) of something split across ranks.
struct Range {
    int64_t first = 0, count = 0;
    int64_t end() const { return first + count; }
};

// Rank `rank` of `size`'s contiguous share of n items; the shares of ranks 0..size-1 tile [0, n)
// in order and differ by at most one item.
inline Range share_of(int64_t n, int rank, int size) {
    const int64_t first = n * rank / size, end = n * (rank + 1) / size;
    return {first, end - first};
}

// What a rank's collectives cost so far (k3 bench reports them per token).
struct CollectiveCounters {
    uint64_t calls = 0;       // collectives (allgathers, gathers to rank 0) of the forward passes
    uint64_t bytes = 0;       // bytes this rank received through them
    double wait_seconds = 0;  // time from posting them to their completion
};

class Collective {
public:
    virtual ~Collective() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    Range share(int64_t n) const { return share_of(n, rank(), size()); }

    // Every rank's block, concatenated in rank order into `all` on every rank: rank r contributes
    // counts[r] floats (counts identical on every rank; mine.size() == counts[rank()]).
    virtual void allgather(std::span<const float> mine, std::span<const int64_t> counts, float* all) = 0;
    // The same blocks concatenated into `all` on rank 0 only (elsewhere `all` is not touched and
    // may be null): for results only rank 0 reads, such as the logits it samples from.
    virtual void gather_to_root(std::span<const float> mine, std::span<const int64_t> counts, float* all) = 0;
    // Every rank's bytes (of any length) in rank order. Waits at most `timeout` for the slowest
    // rank, then throws k3::Error naming the ranks that did not answer (the job cannot continue).
    virtual std::vector<std::string> allgather_bytes(const std::string& mine, std::chrono::milliseconds timeout) = 0;
    // Rank 0's bytes on every rank (`bytes` is only read on rank 0).
    virtual std::string broadcast(const std::string& bytes) = 0;
    virtual CollectiveCounters counters() const = 0;
};

// Every rank reports whether it loaded the model, and the model's identity hash; throws k3::Error
// on every rank when any failed ("rank 1: cannot open ...") or when the files differ.
void agree_on_model(Collective& collective, const std::string& load_error, uint64_t model_identity,
                    std::chrono::milliseconds timeout);

// Every rank reports `value`, something it derived on its own that must be the same everywhere
// (such as which rank runs each expert); throws k3::Error on every rank naming the ranks whose
// `what` differs from rank 0's.
void agree_on(Collective& collective, const std::string& value, const std::string& what,
              std::chrono::milliseconds timeout);

// The job this process belongs to, started from mpirun's environment (MPI_Init). Throws k3::Error
// when k3 was built without MPI.
std::unique_ptr<Collective> start_mpi();

// Whether this build can run parallel jobs (found MPI at configure time).
bool mpi_available();

}  // namespace k3::parallel
