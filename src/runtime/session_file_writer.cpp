#include "runtime/session_file_writer.h"

#include <exception>

#include "runtime/session_file.h"

namespace k3::runtime {

SessionFileWriter::SessionFileWriter(uint64_t identity) : identity_(identity), thread_([this] { run(); }) {}

SessionFileWriter::~SessionFileWriter() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void SessionFileWriter::write(SessionSnapshot state, std::string path, Done done) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back({std::move(state), std::move(path), std::move(done)});
    }
    changed_.notify_all();
}

void SessionFileWriter::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and every queued write done
        Job job = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        uint64_t written = 0;
        std::string error;
        try {
            written = write_session_file(job.path, *job.state, identity_);
        } catch (const std::exception& e) {  // an I/O failure, or memory for the buffers
            error = e.what();
        }
        job.done(written, error);
        lock.lock();
    }
}

}  // namespace k3::runtime
