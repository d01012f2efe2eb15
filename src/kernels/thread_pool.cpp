#include "kernels/thread_pool.h"

#include <limits>

#include "util/error.h"

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
    stopping_.store(true);
    {
        std::lock_guard lock(mutex_);
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
}

void ThreadPool::run_tasks(int thread, uint32_t generation) {
    inside_task = true;
    current_thread = thread;
    const Region& region = regions_[generation % 2];
    for (uint64_t ticket = ticket_.load(std::memory_order_acquire);;) {
        const auto index = uint32_t(ticket);
        if (uint32_t(ticket >> 32) != generation || index >= region.n_tasks.load(std::memory_order_relaxed)) break;
        if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel)) continue;
        // Claimed: the region stays open until this task completes, so its slot is its own.
        (*region.task.load(std::memory_order_relaxed))(int64_t(index), thread);
        const uint32_t n_tasks = region.n_tasks.load(std::memory_order_relaxed);
        if (completed_.fetch_add(1) + 1 == n_tasks && caller_sleeping_.load()) {
            std::lock_guard lock(mutex_);  // the caller is between its test and its wait, or waiting
            done_.notify_one();
        }
        ticket = ticket_.load(std::memory_order_acquire);
    }
    inside_task = false;
}

void ThreadPool::worker_loop(int thread) {
    uint32_t seen = 0;
    for (;;) {
        const auto ready = [&] { return generation_.load() != seen; };
        if (!poll_until(ready)) {
            std::unique_lock lock(mutex_);
            sleeping_workers_.fetch_add(1);
            wake_.wait(lock, ready);
            sleeping_workers_.fetch_sub(1);
        }
        seen = generation_.load(std::memory_order_acquire);
        if (stopping_.load()) return;
        run_tasks(thread, seen);
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
    if (n_tasks > std::numeric_limits<uint32_t>::max())
        throw Error("thread pool: " + std::to_string(n_tasks) + " tasks in one parallel_for (at most 2^32 - 1)");
    const uint32_t count = uint32_t(n_tasks);
    const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
    Region& region = regions_[generation % 2];
    region.task.store(&task, std::memory_order_relaxed);
    region.n_tasks.store(count, std::memory_order_relaxed);
    completed_.store(0, std::memory_order_relaxed);
    ticket_.store(uint64_t(generation) << 32, std::memory_order_release);
    generation_.store(generation);
    if (sleeping_workers_.load() > 0) {
        { std::lock_guard lock(mutex_); }  // a worker between its test and its wait gets there first
        wake_.notify_all();
    }
    run_tasks(0, generation);
    const auto finished = [&] { return completed_.load() == count; };
    if (!poll_until(finished)) {
        std::unique_lock lock(mutex_);
        caller_sleeping_.store(true);
        done_.wait(lock, finished);
        caller_sleeping_.store(false);
    }
}

}  // namespace k3::kernels
