// A parallel job led by rank 0 (issue #17): rank 0 runs the command (its scheduler, sampler,
// server or chat loop, prefix cache) and announces every operation that changes sequence state
// to the other ranks, which replay them in the same order (Engine::follow) and so join each
// forward pass's collectives. Followers never sample and never see text: they receive token ids,
// positions and which sessions and snapshots an operation names.
//
// The announcement is made by Engine and Session themselves (engine.cpp), so no command needs
// code of its own for a parallel job beyond handing a follower to Engine::follow().
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "parallel/collective.h"
#include "runtime/session.h"

namespace k3::runtime {

enum class SessionOp : int64_t { create, destroy, reset, snapshot, restore, checkpoint, truncate, decode, shutdown };

// One announcement as the followers read it: the snapshots rank 0 dropped since the previous one,
// then the operation and its arguments (ids and token ids, all int64).
struct SessionMessage {
    std::vector<int64_t> released;  // snapshot ids
    SessionOp op = SessionOp::shutdown;
    std::vector<int64_t> args;
};

std::string encode_session_message(const SessionMessage& message);
// Throws k3::Error naming what is wrong in a malformed message.
SessionMessage decode_session_message(const std::string& bytes);

// Rank 0's side.
class SessionMirror {
public:
    explicit SessionMirror(parallel::Collective& collective) : collective_(collective) {}

    // Sends `op` to the followers and returns the lock that keeps the next announcement waiting
    // until rank 0 has run this one itself: followers see operations in the order rank 0 runs them.
    [[nodiscard]] std::unique_lock<std::mutex> announce(SessionOp op, std::vector<int64_t> args);
    // The first of n fresh ids for sessions or snapshots (any thread).
    int64_t new_ids(int64_t n = 1) { return next_id_.fetch_add(n); }

    // `state` as a snapshot that followers know by `id`: dropping its last reference (on any
    // thread) releases theirs with the next announcement.
    SessionSnapshot adopt(SessionState state, int64_t id);
    // The id a snapshot from adopt() has; nullopt for one made elsewhere (read from a file).
    static std::optional<int64_t> id_of(const SessionSnapshot& snapshot);
    // Tells the followers with the next announcement that snapshot `id` is gone (any thread).
    void release(int64_t id);

private:

    parallel::Collective& collective_;
    std::mutex mutex_;  // one announced operation at a time
    std::mutex released_mutex_;
    std::vector<int64_t> released_;  // snapshot ids dropped since the last announcement
    std::atomic<int64_t> next_id_ = 1;  // sessions and snapshots, one sequence
};

class Engine;
// A follower's side: replays rank 0's announcements on `engine` until rank 0's engine closes.
// Throws k3::Error when a message is malformed or an operation fails here (the job cannot go on).
void follow_sessions(const Engine& engine, parallel::Collective& collective);

}  // namespace k3::runtime
