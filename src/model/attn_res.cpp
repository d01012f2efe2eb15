#include "model/attn_res.h"

#include <algorithm>

#include "kernels/dot.h"
#include "kernels/vector_ops.h"

namespace k3::model {

void attn_res_mix(const ForwardContext& ctx, const BlockStack& stack, const float* partial,
                  const std::vector<float>& score, int64_t n, float* out) {
    const int64_t E = ctx.hp.n_embd;
    if (stack.snapshots.empty()) {
        std::copy(partial, partial + n * E, out);
        return;
    }
    const int64_t n_candidates = int64_t(stack.snapshots.size()) + 1;
    const auto candidate = [&](int64_t t, int64_t i) {
        return (i + 1 < n_candidates ? stack.snapshots[size_t(i)] : partial) + t * E;
    };
    // Every (token, candidate) score a task of its own: in decode, one token's candidates one
    // after another were a serial step of some 20 µs per layer.
    const ScratchArena::Frame frame(ctx.scratch);
    float* const weights = ctx.scratch.floats(n * n_candidates);
    ctx.pool.parallel_for(n * n_candidates, [&](int64_t task, int) {
        // s_i = (c_i / rms(c_i)) · score = (c_i · score) / rms(c_i)
        const float* c = candidate(task / n_candidates, task % n_candidates);
        weights[task] = kernels::dot_f32(c, score.data(), E) * kernels::rms_scale(c, ctx.hp.rms_eps, E);
    });
    ctx.pool.parallel_for(n, [&](int64_t t, int) {
        float* w = weights + t * n_candidates;
        kernels::softmax(w, n_candidates);
        float* o = out + t * E;
        std::fill(o, o + E, 0.0f);
        for (int64_t i = 0; i < n_candidates; ++i) kernels::axpy_f32(w[i], candidate(t, i), o, E);
    });
}

}  // namespace k3::model
