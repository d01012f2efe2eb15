// SiTU-GLU feed-forward (k3-architecture.md §6.1, §7): the dense FFN and the shared experts.
#pragma once

#include <cstdint>

#include "model/context.h"
#include "model/weights.h"

namespace k3::model {

// out[t] = W_down · situ(W_gate · y[t], W_up · y[t])   for n rows; y: [n][W_gate.cols],
// out: [n][W_down.rows].
void situ_glu(const ForwardContext& ctx, const GluWeights& w, const float* y, int64_t n, float* out);
// gate[i] = situ(gate[i], up[i]) for i < count, with the model's betas (kernels::situ), on the
// pool's threads for prefill.
void situ_in_place(const ForwardContext& ctx, float* gate, const float* up, int64_t count);

}  // namespace k3::model
