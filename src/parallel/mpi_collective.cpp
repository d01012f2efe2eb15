#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <sys/prctl.h>

#include "parallel/collective.h"
#include "util/error.h"

#ifdef K3_HAVE_MPI
#include <mpi.h>
#endif

namespace k3::parallel {

#ifndef K3_HAVE_MPI

bool mpi_available() { return false; }

std::unique_ptr<Collective> start_mpi() {
    throw Error("--parallel-mode tp: this k3 was built without MPI (install libopenmpi-dev and reconfigure)");
}

#else

bool mpi_available() { return true; }

namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` until it holds: without pause for the first kSpinning (a peer on an idle machine
// arrives within microseconds), then sleeping between polls, 1 us longer each time up to 50 us, so
// a rank waiting for a slower one leaves its core to the matmuls of the other ranks. Neither
// sched_yield (on a loaded machine each yield hands the core away for a whole time slice: 35 ms per
// allgather measured) nor a sleep at the kernel's default 50 us timer slack (69 us per allgather
// on an idle machine, against 1.5 us spinning) does: the waiting thread's slack is set to 1 us (a
// thread's own: in serve and chat rank 0's passes run on the scheduler's thread).
// After kLongWait (a follower waiting for rank 0's next request) it sleeps a millisecond at a time,
// a tenth of the wait at most. Returns false once `deadline` passes.
constexpr std::chrono::microseconds kSpinning{20};
constexpr std::chrono::milliseconds kLongWait{10};

template <typename Poll>
bool wait_polling(Poll done, Clock::time_point deadline = Clock::time_point::max()) {
    static thread_local const bool slack_set = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;  // ns
    (void)slack_set;
    const Clock::time_point start = Clock::now(), sleep_from = start + kSpinning;
    for (int sleeps = 0;;) {
        if (done()) return true;
        const Clock::time_point now = Clock::now();
        if (now >= deadline) return false;
        if (now - start >= kLongWait) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        else if (now >= sleep_from) std::this_thread::sleep_for(std::chrono::microseconds(std::min(++sleeps, 50)));
    }
}

class MpiCollective final : public Collective {
public:
    MpiCollective() {
        // Every wait here polls MPI_Test (wait_polling) and never blocks inside MPI, so Open MPI's
        // own yield when a progress round finds nothing (on by default when oversubscribed) would
        // only hand the core away at every poll: off, unless the user chose.
        setenv("OMPI_MCA_mpi_yield_when_idle", "0", 0);
        int provided = 0;
        // Serialized: in serve and chat rank 0's passes run on the scheduler's thread, one at a time.
        if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            throw Error("parallel job: MPI_Init failed");
        if (provided < MPI_THREAD_SERIALIZED)
            throw Error("parallel job: this MPI library cannot be called from more than one thread (MPI_THREAD_SERIALIZED)");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
        check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    }

    // A rank leaving by an exception does not finalize: the others may be inside a collective it
    // will never join, and its non-zero exit makes mpirun end them.
    ~MpiCollective() override {
        if (std::uncaught_exceptions() == 0) MPI_Finalize();
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }

    void allgather(std::span<const float> mine, std::span<const int64_t> counts, float* all) override {
        gather(mine, counts, all, false);
    }
    void gather_to_root(std::span<const float> mine, std::span<const int64_t> counts, float* all) override {
        gather(mine, counts, all, true);
    }

    std::vector<std::string> allgather_bytes(const std::string& mine, std::chrono::milliseconds timeout) override {
        // Point to point through rank 0 rather than one collective, so that rank 0 can name the
        // ranks that never answered.
        const Clock::time_point deadline = Clock::now() + timeout;
        std::vector<std::string> all(static_cast<size_t>(size_));
        if (rank_ != 0) {
            send(mine, 0, deadline);
            const std::string packed = receive_from(0, deadline, "rank 0 did not answer within " + seconds(timeout));
            for (size_t at = 0, r = 0; r < all.size(); ++r) {
                const size_t length = std::stoull(packed.substr(at, 16), nullptr, 16);
                all[r] = packed.substr(at + 16, length);
                at += 16 + length;
            }
            return all;
        }
        all[0] = mine;
        std::vector<bool> answered(static_cast<size_t>(size_), false);
        answered[0] = true;
        const bool complete = wait_polling(
            [&] {
                bool every = true;
                for (int r = 1; r < size_; ++r) {
                    if (!answered[size_t(r)] && probe(r)) {
                        all[size_t(r)] = receive(r);
                        answered[size_t(r)] = true;
                    }
                    every = every && answered[size_t(r)];
                }
                return every;
            },
            deadline);
        if (!complete) {
            std::string missing;
            for (int r = 1; r < size_; ++r)
                if (!answered[size_t(r)]) missing += (missing.empty() ? "rank " : ", rank ") + std::to_string(r);
            throw Error("parallel job: " + missing + " did not report within " + seconds(timeout) +
                        " (it is still loading, hung or gone)");
        }
        std::string packed;
        for (const std::string& report : all) {
            char length[17];
            std::snprintf(length, sizeof length, "%016zx", report.size());
            packed += length + report;
        }
        for (int r = 1; r < size_; ++r) send(packed, r, deadline);
        return all;
    }

    std::string broadcast(const std::string& bytes) override {
        uint64_t length = bytes.size();
        MPI_Request request;
        check(MPI_Ibcast(&length, 1, MPI_UINT64_T, 0, comm_, &request), "MPI_Ibcast");
        wait(request, "MPI_Ibcast");
        std::string received = rank_ == 0 ? bytes : std::string(length, '\0');
        check(MPI_Ibcast(received.data(), mpi_count(int64_t(length), "a broadcast"), MPI_CHAR, 0, comm_, &request),
              "MPI_Ibcast");
        wait(request, "MPI_Ibcast");
        return received;
    }

    CollectiveCounters counters() const override { return counters_; }

private:
    static constexpr int kReportTag = 17;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    CollectiveCounters counters_;

    // Every rank's block of `counts` floats, in rank order, into `all` on every rank or on rank 0.
    void gather(std::span<const float> mine, std::span<const int64_t> counts, float* all, bool root_only) {
        std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
        int64_t total = 0;
        for (int r = 0; r < size_; ++r) {
            offsets[size_t(r)] = mpi_count(total, "a gather");
            sizes[size_t(r)] = mpi_count(counts[size_t(r)], "a gather");
            total += counts[size_t(r)];
        }
        mpi_count(total, "a gather");
        const Clock::time_point start = Clock::now();
        MPI_Request request;
        const char* call = root_only ? "MPI_Igatherv" : "MPI_Iallgatherv";
        if (root_only)
            check(MPI_Igatherv(mine.data(), int(mine.size()), MPI_FLOAT, all, sizes.data(), offsets.data(), MPI_FLOAT,
                               0, comm_, &request),
                  call);
        else
            check(MPI_Iallgatherv(mine.data(), int(mine.size()), MPI_FLOAT, all, sizes.data(), offsets.data(),
                                  MPI_FLOAT, comm_, &request),
                  call);
        wait(request, call);
        ++counters_.calls;
        if (!root_only || rank_ == 0) counters_.bytes += uint64_t(total - int64_t(mine.size())) * sizeof(float);
        counters_.wait_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }

    void check(int code, const char* call) const {
        if (code == MPI_SUCCESS) return;
        char text[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(code, text, &length);
        throw Error("parallel job: " + std::string(call) + " failed on rank " + std::to_string(rank_) + ": " +
                    std::string(text, size_t(length)));
    }
    int mpi_count(int64_t count, const char* what) const {
        if (count > INT_MAX)
            throw Error("parallel job: " + std::string(what) + " of " + std::to_string(count) +
                        " values exceeds MPI's int count; use a smaller batch");
        return int(count);
    }
    static std::string seconds(std::chrono::milliseconds t) {
        char text[32];
        std::snprintf(text, sizeof text, "%g s", double(t.count()) / 1000.0);
        return text;
    }

    // False once `deadline` passes first.
    bool wait(MPI_Request& request, const char* call, Clock::time_point deadline = Clock::time_point::max()) {
        int code = MPI_SUCCESS;
        const bool done = wait_polling(
            [&] {
                int complete = 0;
                code = MPI_Test(&request, &complete, MPI_STATUS_IGNORE);
                return code != MPI_SUCCESS || complete;
            },
            deadline);
        check(code, call);
        return done;
    }
    void send(const std::string& bytes, int to, Clock::time_point deadline) {
        MPI_Request request;
        check(MPI_Isend(bytes.data(), mpi_count(int64_t(bytes.size()), "a report"), MPI_CHAR, to, kReportTag, comm_,
                        &request),
              "MPI_Isend");
        if (!wait(request, "MPI_Isend", deadline))
            throw Error("parallel job: rank " + std::to_string(to) + " did not take rank " + std::to_string(rank_) +
                        "'s report in time");
    }
    bool probe(int from) {
        int found = 0;
        check(MPI_Iprobe(from, kReportTag, comm_, &found, MPI_STATUS_IGNORE), "MPI_Iprobe");
        return found;
    }
    std::string receive(int from) {
        MPI_Status status;
        check(MPI_Probe(from, kReportTag, comm_, &status), "MPI_Probe");
        int length = 0;
        check(MPI_Get_count(&status, MPI_CHAR, &length), "MPI_Get_count");
        std::string bytes(size_t(length), '\0');
        check(MPI_Recv(bytes.data(), length, MPI_CHAR, from, kReportTag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
        return bytes;
    }
    std::string receive_from(int from, Clock::time_point deadline, const std::string& late) {
        if (!wait_polling([&] { return probe(from); }, deadline)) throw Error("parallel job: " + late);
        return receive(from);
    }
};

}  // namespace

std::unique_ptr<Collective> start_mpi() { return std::make_unique<MpiCollective>(); }

#endif

}  // namespace k3::parallel
