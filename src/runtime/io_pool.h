// A few threads that run blocking reads so that they overlap computation: jobs run in the
// order they were submitted, several at once (the disk's queue depth).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace k3::runtime {

class IoPool {
public:
    explicit IoPool(int n_threads);
    ~IoPool();  // finishes the queued jobs, then joins
    IoPool(const IoPool&) = delete;
    IoPool& operator=(const IoPool&) = delete;

    // The job must not throw (it reports its own failure).
    void submit(std::function<void()> job);

private:
    void worker();
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace k3::runtime
