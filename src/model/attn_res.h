// Attention residuals, block variant (k3-architecture.md §3.1): each sublayer's input is a
// softmax mixture over the banked block snapshots and the current partial sum.
#pragma once

#include <cstdint>
#include <vector>

#include "model/context.h"

namespace k3::model {

// The per-token stack of block snapshots of one forward pass: snapshots[b] is [n][E].
struct BlockStack {
    std::vector<const float*> snapshots;
};

// out[t] = Mix(P[t], stack[t], score) for every row t:
//   candidates c_0..c_{m-1} = snapshots in push order, c_m = P;
//   s_i = sum_d (c_i[d] / sqrt(mean(c_i^2) + eps)) * score[d];  p = softmax(s);
//   out = sum_i p_i c_i   (raw candidates).
// With an empty stack the result is P itself. P, out: [n][E].
void attn_res_mix(const ForwardContext& ctx, const BlockStack& stack, const float* partial,
                  const std::vector<float>& score, int64_t n, float* out);

}  // namespace k3::model
