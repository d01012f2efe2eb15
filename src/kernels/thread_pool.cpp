#include "kernels/thread_pool.h"

namespace k3::kernels {

namespace {
thread_local bool inside_task = false;
thread_local int current_thread = 0;  // the pool thread running the current task

// Polls `ready` a while before the caller sleeps; true as soon as it holds. Each round yields
// the core, so that on an oversubscribed machine the poll gives way to the thread it waits for
// (pause-based spinning measured 20x slower than sleeping there); 200 rounds are some 100 µs,
// longer than the gap between the calls of one forward pass.
constexpr int kPollRounds = 200;

template <class Ready>
bool poll_until(Ready ready) {
    for (int i = 0; i < kPollRounds; ++i) {
        if (ready()) return true;
        std::this_thread::yield();
    }
    return false;
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    scratch_.resize(size_t(n_threads));
    for (int t = 1; t < n_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

void* ThreadPool::thread_scratch(int thread, size_t bytes) {
    Scratch& scratch = scratch_.at(size_t(thread));
    const size_t n_lines = (bytes + sizeof(CacheLine) - 1) / sizeof(CacheLine);
    if (scratch.n_lines < n_lines) {
        scratch.lines = std::make_unique<CacheLine[]>(n_lines);
        scratch.n_lines = n_lines;
    }
    return scratch.lines.get();
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_.store(true);
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
}

void ThreadPool::run_tasks(int thread) {
    inside_task = true;
    current_thread = thread;
    for (int64_t i = next_.fetch_add(1); i < n_tasks_; i = next_.fetch_add(1)) (*task_)(i, thread);
    inside_task = false;
}

void ThreadPool::worker_loop(int thread) {
    uint64_t seen = 0;
    const auto ready = [&] { return stopping_.load() || generation_.load(std::memory_order_acquire) != seen; };
    for (;;) {
        if (!poll_until(ready)) {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, ready);
        }
        if (stopping_) return;
        seen = generation_.load(std::memory_order_acquire);
        run_tasks(thread);
        if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard lock(mutex_);  // the caller may be between its check and its wait
            done_.notify_one();
        }
    }
}

void ThreadPool::parallel_for(int64_t n_tasks, const Task& task) {
    if (n_tasks <= 0) return;
    if (inside_task) {
        for (int64_t i = 0; i < n_tasks; ++i) task(i, current_thread);
        return;
    }
    std::lock_guard caller(callers_);  // also for the inline case: thread 0's scratch is one caller's
    if (workers_.empty() || n_tasks == 1) {
        // A nested call runs inline instead of waiting for this lock.
        struct InsideTask {
            InsideTask() { inside_task = true; }
            ~InsideTask() { inside_task = false; }
        } inside;
        for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
        return;
    }
    {
        std::lock_guard lock(mutex_);  // sleeping workers test generation_ under it
        task_ = &task;
        n_tasks_ = n_tasks;
        next_.store(0);
        busy_workers_.store(int(workers_.size()));
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    run_tasks(0);
    const auto finished = [&] { return busy_workers_.load(std::memory_order_acquire) == 0; };
    if (!poll_until(finished)) {
        std::unique_lock lock(mutex_);
        done_.wait(lock, finished);
    }
    task_ = nullptr;
}

}  // namespace k3::kernels
