// Writes session files (session_file.h) on a thread of its own, in the order asked, so that
// whoever has a state to keep never waits on the disk unless it chooses to: the prompt cache's
// disk tier (prefix_cache_disk.h) and the server's slot files (Scheduler::save_slot).
//
//   SessionFileWriter writer(engine.identity());
//   writer.write(state, path, [](uint64_t bytes, const std::string& error) { ... });  // on its thread
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/session.h"

namespace k3::runtime {

class SessionFileWriter {
public:
    // Told, on the writer thread, the bytes written, or 0 and what went wrong.
    using Done = std::function<void(uint64_t bytes, const std::string& error)>;

    explicit SessionFileWriter(uint64_t identity);
    // Finishes the queued writes (each one's Done is called) before it returns.
    ~SessionFileWriter();
    SessionFileWriter(const SessionFileWriter&) = delete;
    SessionFileWriter& operator=(const SessionFileWriter&) = delete;

    // Queues `state` for `path` (written atomically, as write_session_file does).
    void write(SessionSnapshot state, std::string path, Done done);

private:
    struct Job {
        SessionSnapshot state;
        std::string path;
        Done done;
    };
    void run();

    const uint64_t identity_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Job> queue_;
    bool stopping_ = false;
    std::thread thread_;  // last: started once everything above exists
};

}  // namespace k3::runtime
