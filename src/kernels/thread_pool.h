// A persistent pool of worker threads. parallel_for hands out task indices dynamically; the
// calling thread works too. Calls from several threads are serialized; a parallel_for issued
// from inside a task runs inline on that thread. A decode step issues hundreds of calls back to
// back, so workers (and the caller waiting for them) poll briefly, yielding the core, before they
// sleep on a condition variable: a hand-off then usually costs no futex wake-up.
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
    // kept for the pool's lifetime: kernels' scratch, grown to the largest request and then
    // reused, so that a forward pass allocates nothing after its first call.
    void* thread_scratch(int thread, size_t bytes);

private:
    void worker_loop(int thread);
    void run_tasks(int thread);

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
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const Task* task_ = nullptr;
    int64_t n_tasks_ = 0;
    std::atomic<int64_t> next_{0};
    std::atomic<int> busy_workers_{0};
    std::atomic<uint64_t> generation_{0};  // published (release) after task_ and n_tasks_
    std::atomic<bool> stopping_{false};
};

}  // namespace k3::kernels
