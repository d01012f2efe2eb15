// A persistent pool of worker threads. parallel_for hands out task indices dynamically; the
// calling thread works too. Calls from several threads are serialized; a parallel_for issued
// from inside a task runs inline on that thread. A decode step issues hundreds of calls back to
// back, so workers (and the caller waiting for the last task) poll briefly, yielding the core,
// before they sleep on a condition variable: a hand-off then usually costs no system call and
// takes no lock. The caller waits for the region's tasks, not for the workers: a worker that
// wakes late (the scheduler ran something else on its core) finds every task claimed and is not
// waited for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace k3::kernels {

class ThreadPool {
public:
    // task(index, thread): thread is in [0, size()), unique among concurrently running tasks.
    using Task = std::function<void(int64_t index, int thread)>;

    explicit ThreadPool(int n_threads);  // n_threads <= 0: one per hardware thread
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return int(workers_.size()) + 1; }
    void parallel_for(int64_t n_tasks, const Task& task);
    // A 64-byte aligned buffer of at least `bytes` for pool thread `thread` (a task's own index),
    // kept for the pool's lifetime: a task's scratch (the kernels', the KDA and MLA head tasks'),
    // grown to the largest request and then reused, so that a forward pass allocates nothing
    // after its first call. A task's call replaces what an earlier task on the thread left.
    void* thread_scratch(int thread, size_t bytes);

private:
    void worker_loop(int thread);
    // Runs tasks of region `generation` on `thread` while it has unclaimed ones.
    void run_tasks(int thread, uint32_t generation);

    std::vector<std::thread> workers_;
    struct alignas(64) CacheLine {
        std::byte bytes[64];
    };
    struct Scratch {
        std::unique_ptr<CacheLine[]> lines;  // C++17's aligned new: 64-byte aligned
        size_t n_lines = 0;
    };
    std::vector<Scratch> scratch_;  // one per thread, sized in the constructor
    std::mutex callers_;  // one parallel_for at a time
    // Region g's task and size, at regions_[g % 2], set by the caller before it publishes the
    // region's ticket. A late worker may read a slot the caller is filling for region g + 2 (or
    // one whose size is not its region's), but by then its claim of region g fails; once a claim
    // succeeds, the region stays open until that task completes, so the slot holds its own.
    // (With one slot, a worker that read the new size before the new ticket claimed task n of
    // the ended region: a task run twice, a region ending early or never.)
    struct Region {
        std::atomic<const Task*> task{nullptr};
        std::atomic<uint32_t> n_tasks{0};
    };
    Region regions_[2];
    // generation << 32 | the next unclaimed task: a claim (compare-exchange) of a region that
    // has ended fails, so a late worker never takes a task of the next region by mistake.
    std::atomic<uint64_t> ticket_{0};
    std::atomic<uint32_t> completed_{0};   // tasks of the current region done
    std::atomic<uint32_t> generation_{0};  // the latest region, published after its ticket
    std::atomic<bool> stopping_{false};
    // Sleeping once the polls give up. Each side announces its sleep (seq_cst) before testing
    // what it waits for under mutex_, and the waker tests the announcement after publishing, so
    // a wake-up is never lost and an awake pool takes no lock. (std::atomic::wait, tried first,
    // lost wake-ups with GCC 12's libstdc++: the back-to-back regions test stalled.)
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::atomic<int> sleeping_workers_{0};
    std::atomic<bool> caller_sleeping_{false};
};

}  // namespace k3::kernels
