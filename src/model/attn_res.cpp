#include "model/attn_res.h"

#include <algorithm>
#include <cmath>

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
    const size_t n_candidates = stack.snapshots.size() + 1;
    ctx.pool.parallel_for(n, [&](int64_t t, int) {
        std::vector<const float*> candidates(n_candidates);
        for (size_t i = 0; i + 1 < n_candidates; ++i) candidates[i] = stack.snapshots[i].data() + t * E;
        candidates.back() = partial + t * E;
        std::vector<float> weights(n_candidates);
        for (size_t i = 0; i < n_candidates; ++i) {
            // s_i = (c_i / rms(c_i)) · score = (c_i · score) / rms(c_i)
            const float* c = candidates[i];
            double sum_squares = 0.0;
            for (int64_t d = 0; d < E; ++d) sum_squares += double(c[d]) * c[d];
            const float inv_rms = 1.0f / std::sqrt(float(sum_squares / double(E)) + ctx.hp.rms_eps);
            weights[i] = kernels::dot_f32(c, score.data(), E) * inv_rms;
        }
        kernels::softmax(weights.data(), int64_t(n_candidates));
        float* o = out + t * E;
        std::fill(o, o + E, 0.0f);
        for (size_t i = 0; i < n_candidates; ++i) kernels::axpy_f32(weights[i], candidates[i], o, E);
    });
}

}  // namespace k3::model
