#include "kernels/thread_pool.h"

namespace k3::kernels {

namespace {
thread_local bool inside_task = false;
thread_local int current_thread = 0;  // the pool thread running the current task
}

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int t = 1; t < n_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
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
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
        }
        run_tasks(thread);
        std::lock_guard lock(mutex_);
        if (--busy_workers_ == 0) done_.notify_one();
    }
}

void ThreadPool::parallel_for(int64_t n_tasks, const Task& task) {
    if (n_tasks <= 0) return;
    if (inside_task || workers_.empty() || n_tasks == 1) {
        for (int64_t i = 0; i < n_tasks; ++i) task(i, current_thread);
        return;
    }
    std::lock_guard caller(callers_);
    {
        std::lock_guard lock(mutex_);
        task_ = &task;
        n_tasks_ = n_tasks;
        next_.store(0);
        busy_workers_ = int(workers_.size());
        ++generation_;
    }
    wake_.notify_all();
    run_tasks(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return busy_workers_ == 0; });
    task_ = nullptr;
}

}  // namespace k3::kernels
