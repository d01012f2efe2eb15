// Gated NoPE multi-head latent attention, served absorbed (k3-architecture.md §5). The cache
// holds per token the normalized latent and the head-shared, un-rotated "rope" key part.
#pragma once

#include <cstdint>
#include <span>

#include "model/context.h"
#include "model/state.h"
#include "model/weights.h"

namespace k3::model {

// out[t] = MLA(x[t]) for n rows of normed input x: [n][E]; each slice appends its tokens to its
// sequence's cache of layer il and attends causally over everything cached.
void mla_forward(const ForwardContext& ctx, const MlaWeights& w, int64_t il, const float* x, int64_t n,
                 std::span<const SequenceSlice> sequences, float* out);

}  // namespace k3::model
