// What a session holds, in the model's terms: the sequence state (KDA recurrent and conv
// states, the MLA latent cache in shared pages, model/state.h) with the ids that led there.
// For the runtime's own parts that store, copy and write states (prefix cache, session files);
// callers of the engine see only Session and SessionSnapshot (session.h).
#pragma once

#include <cstdint>
#include <vector>

#include "model/state.h"

namespace k3::runtime {

struct SessionState {
    model::SequenceState sequence;
    std::vector<int32_t> tokens;  // tokens.size() == sequence.position
};

}  // namespace k3::runtime
