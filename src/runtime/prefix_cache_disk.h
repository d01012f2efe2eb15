// The prompt cache's disk tier (--cache-dir, --cache-disk): session files (session_file.h) in a
// folder under a size budget, the least recently used deleted first. Files are written by a
// thread of its own (session_file_writer.h), atomically (a temporary name, fsync, rename), so whoever stores a state
// (the scheduler) never waits on the disk. A file is checked against the model's identity when
// the folder is scanned and again, with its checksum, when it is read; a foreign or damaged one
// is ignored with a warning on stderr and left where it is.
//
//   PrefixCacheDisk disk(dir, 32 << 30, max_pending, engine.identity(), on_change);
//   for (auto& file : disk.scan()) ...;           // what an earlier run left, oldest first
//   disk.write(state);                             // queued; on_change(tokens, path, true) once on disk
//   SessionSnapshot state = disk.load(path, engine);
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/session.h"
#include "runtime/session_file_writer.h"

namespace k3::runtime {

class Engine;

class PrefixCacheDisk {
public:
    // A state's file appeared (`present`, after a write) or went (deleted to keep the budget).
    // Called on the writer thread, never under the disk tier's lock, so it may call into it.
    using Listener = std::function<void(std::span<const int32_t> tokens, const std::string& path, bool present)>;

    struct File {
        std::vector<int32_t> tokens;
        std::string path;
    };

    // Creates the folder if needed (k3::Error naming it when it cannot). Writes still queued
    // hold their states in memory: at most `max_pending_bytes` of them; a write beyond that is
    // dropped (the state stays in memory only).
    PrefixCacheDisk(std::string dir, uint64_t budget_bytes, uint64_t max_pending_bytes, uint64_t identity,
                    Listener listener);
    // Finishes the queued writes, so that a restart finds them.
    ~PrefixCacheDisk();
    PrefixCacheDisk(const PrefixCacheDisk&) = delete;
    PrefixCacheDisk& operator=(const PrefixCacheDisk&) = delete;

    // This model's files in the folder, least recently used first (by modification time), after
    // deleting the oldest beyond the budget. Call once, before the first write.
    std::vector<File> scan();
    // Queues the state's file (nothing when it is already on disk or queued).
    void write(const SessionSnapshot& state);
    // The state in `path` (or in a write still queued for it), marked as just used. A damaged
    // or foreign file is forgotten and k3::Error names it.
    SessionSnapshot load(const std::string& path, const Engine& engine);
    // Waits until every queued write is on disk (or failed).
    void flush();

    size_t files() const;
    uint64_t bytes() const;
    uint64_t budget_bytes() const { return budget_bytes_; }
    // The file a state of these tokens is stored in.
    std::string path_for(std::span<const int32_t> tokens) const;

private:
    struct Stored {
        std::vector<int32_t> tokens;
        uint64_t bytes = 0;
        std::list<std::string>::iterator lru;
    };
    // A queued write ended (on the writer thread): the file is recorded and the budget kept.
    void written(const SessionSnapshot& state, const std::string& path, uint64_t bytes);
    void record(const std::string& path, std::vector<int32_t> tokens, uint64_t bytes);  // under mutex_
    // Deletes least recently used files until the budget holds; returns what went.
    std::vector<File> delete_over_budget();  // under mutex_
    void tell(const std::vector<File>& files, bool present) const;

    const std::string dir_;
    const uint64_t budget_bytes_;
    const uint64_t max_pending_bytes_;
    const uint64_t identity_;
    const Listener listener_;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::unordered_map<std::string, Stored> stored_;  // by path
    std::list<std::string> lru_;                      // paths, most recently used first
    uint64_t stored_bytes_ = 0;
    std::unordered_map<std::string, SessionSnapshot> pending_;  // queued or being written, by path
    uint64_t pending_bytes_ = 0;
    SessionFileWriter writer_;  // last: its thread stops first, after the queued writes
};

}  // namespace k3::runtime
