#include "model/situ.h"

#include <vector>

#include "kernels/vector_ops.h"

namespace k3::model {

void situ_glu(const ForwardContext& ctx, const GluWeights& w, const float* y, int64_t n, float* out) {
    const int64_t width = w.gate.rows;
    std::vector<float> gate(size_t(n * width)), up(size_t(n * width));  // [n][width]
    ctx.linear_pair(w.gate, w.up, y, n, gate.data(), up.data());
    // situ(g, u) = [beta tanh(g/beta) sigmoid(g)] * [lambda tanh(u/lambda)]
    kernels::situ(gate.data(), up.data(), ctx.hp.situ_beta, ctx.hp.situ_linear_beta, n * width, gate.data());
    ctx.linear(w.down, gate.data(), n, out);
}

}  // namespace k3::model
