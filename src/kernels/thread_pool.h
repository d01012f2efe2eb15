// A persistent pool of worker threads. parallel_for hands out task indices dynamically; the
// calling thread works too. Calls from several threads are serialized; a parallel_for issued
// from inside a task runs inline on that thread. A decode step issues hundreds of calls back to
// back, so workers (and the caller waiting for them) poll briefly, yielding the core, before they
// sleep on a condition variable: a hand-off then usually costs no futex wake-up.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
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

private:
    void worker_loop(int thread);
    void run_tasks(int thread);

    std::vector<std::thread> workers_;
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
