// The state one sequence carries between forward passes (DESIGN.md: state is per sequence).
#pragma once

#include <cstdint>
#include <vector>

namespace k3::model {

struct LayerState {
    std::vector<float> conv;       // KDA: [3 (q, k, v)][I channels][conv_kernel - 1], oldest first
    std::vector<float> recurrent;  // KDA: [n_head][D key][D value], f32
    std::vector<float> mla_cache;  // MLA: [position][kv_lora_rank + rope_dim] = [normed latent | k_pe]
};

struct SequenceState {
    const void* model = nullptr;  // the Model it belongs to (restore checks it)
    int64_t position = 0;         // tokens consumed
    std::vector<LayerState> layers;
};

// One sequence's rows in a forward pass over a flat batch of tokens.
struct SequenceSlice {
    SequenceState* state = nullptr;
    int64_t first = 0;     // first row in the batch
    int64_t n_tokens = 0;
};

}  // namespace k3::model
