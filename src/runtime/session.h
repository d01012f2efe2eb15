// One sequence being generated: its KDA recurrent and conv states, its MLA latent cache and
// its position. Not thread-safe; a session belongs to one caller at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace k3::model { struct SequenceState; }

namespace k3::runtime {

class Engine;

// A saved copy of a session's state (prompt caching). Immutable; restorable any number of times.
using SessionSnapshot = std::shared_ptr<const model::SequenceState>;

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
    void reset();              // back to an empty sequence

    SessionSnapshot snapshot() const;
    void restore(const SessionSnapshot& snapshot);  // k3::Error if from another model

    const Engine& engine() const { return engine_; }
    model::SequenceState& state() { return *state_; }

private:
    const Engine& engine_;
    std::unique_ptr<model::SequenceState> state_;
};

}  // namespace k3::runtime
