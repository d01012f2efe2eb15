// One sequence being generated: its state (session_state.h), the ids it has consumed and the
// KDA checkpoints it keeps so it can roll back. Not thread-safe; a session belongs to one
// caller at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace k3::model { struct SequenceState; }

namespace k3::runtime {

class Engine;
struct SessionState;  // a sequence's state at one position with the ids that led there

// A saved copy of a session's state (prompt caching). Immutable; restorable any number of times.
// It shares the session's MLA pages and KDA states, so taking one costs pointers, not a copy.
using SessionSnapshot = std::shared_ptr<const SessionState>;

class Session {
public:
    explicit Session(const Engine& engine);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Feeds tokens (one forward pass) and returns the logits of the last token, or of every
    // token as [tokens.size()][n_vocab] when all_logits is set.
    std::vector<float> eval(std::span<const int32_t> tokens, bool all_logits = false);

    int64_t position() const;  // tokens consumed so far
    const std::vector<int32_t>& tokens() const;
    void reset();              // back to an empty sequence (checkpoints dropped)

    SessionSnapshot snapshot() const;
    void restore(const SessionSnapshot& snapshot);  // k3::Error if from another model; checkpoints dropped

    // Remembers the state at the current position, for truncate(). Costs pointers until the
    // next eval, which then copies the KDA state (about 434 MB on the real K3) once.
    void checkpoint();
    // Back to the first `position` tokens: restores the nearest checkpoint at or before it (the
    // empty sequence at worst) and replays the tokens between. k3::Error if beyond position().
    void truncate(int64_t position);
    // The position truncate(position) would restore before replaying.
    int64_t checkpoint_at_or_before(int64_t position) const;

    const Engine& engine() const { return engine_; }

private:
    friend class Engine;  // decode() advances the state and records the tokens it feeds
    model::SequenceState& state();
    void reset_here();
    SessionSnapshot copy_state() const;  // snapshot() without announcing it
    const Engine& engine_;
    int64_t mirror_id_ = 0;  // the followers' name for this session (rank 0 of a led job)
    std::unique_ptr<SessionState> state_;  // never null
    std::vector<SessionSnapshot> checkpoints_;  // ascending positions, all <= position()
};

}  // namespace k3::runtime
