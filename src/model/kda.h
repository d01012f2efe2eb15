// Kimi Delta Attention (k3-architecture.md §4): q/k/v projections through a causal depthwise
// conv and SiLU, L2-normed q/k, a per-channel decay gate and a per-head beta, then the gated
// delta rule, token by token (decode, §4.4) or in chunks (prefill, §4.5).
#pragma once

#include <cstdint>
#include <span>

#include "model/context.h"
#include "model/state.h"
#include "model/weights.h"

namespace k3::model {

// One head's inputs over a run of tokens. q is L2-normed and scaled by 1/sqrt(D), k L2-normed,
// g the log-decay per key channel (< 0). Rows of q/k/v/g are `stride` floats apart, beta values
// `beta_stride` apart, output rows `out_stride` apart. D_k = D_v = head_dim.
struct KdaHeadRun {
    const float* q;
    const float* k;
    const float* v;
    const float* g;
    const float* beta;
    int64_t stride, beta_stride;
    int64_t n_tokens, head_dim;
    float* out;
    int64_t out_stride;
};

// The floats of working memory kda_recurrent and kda_chunked (chunks of `chunk` tokens) need.
int64_t kda_scratch_floats(int64_t head_dim, int64_t chunk);
// The recurrence (§4.4). state: [D key][D value], updated in place; scratch: kda_scratch_floats.
void kda_recurrent(const KdaHeadRun& run, float* state, float* scratch);
// The chunked form (§4.5) over chunks of `chunk` tokens; same result as the recurrence.
void kda_chunked(const KdaHeadRun& run, float* state, int64_t chunk, float* scratch);

constexpr int64_t kKdaChunk = 16;

// out[t] = KDA(x[t]) for n rows of normed input x: [n][E]; each slice advances its sequence's
// conv and recurrent state of layer il.
void kda_forward(const ForwardContext& ctx, const KdaWeights& w, int64_t il, const float* x, int64_t n,
                 std::span<const SequenceSlice> sequences, float* out);

}  // namespace k3::model
