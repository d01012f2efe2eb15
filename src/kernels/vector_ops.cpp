#include "kernels/vector_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/dot.h"

namespace k3::kernels {

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out) {
    // Sum in double as ggml does, so long rows do not drift.
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
    const float scale = 1.0f / std::sqrt(float(sum / double(n)) + eps);
    if (w) {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
    } else {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
    }
}

void l2_norm(const float* x, float eps, int64_t n, float* out) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
    const float scale = 1.0f / std::max(std::sqrt(float(sum)), eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
}

void softmax(float* x, int64_t n) {
    const float max = *std::max_element(x, x + n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void sigmoid(const float* x, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = sigmoid(x[i]);
}

void silu(const float* x, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * sigmoid(x[i]);
}

void multiply_sigmoid(const float* gate, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] *= sigmoid(gate[i]);
}

void situ(const float* gate, const float* up, float beta, float linear_beta, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        const float gate_part = beta * std::tanh(g / beta) * sigmoid(g);
        const float up_part = linear_beta > 0.0f ? linear_beta * std::tanh(up[i] / linear_beta) : up[i];
        out[i] = gate_part * up_part;
    }
}

void causal_conv(const float* u, int64_t u_stride, int64_t n_tokens, int64_t channels, const float* w, int k,
                 float* state, float* out, int64_t out_stride) {
    const int history = k - 1;
    std::vector<float> window(size_t(history + n_tokens));  // [state | inputs] of one channel
    for (int64_t c = 0; c < channels; ++c) {
        float* s = state + c * history;
        std::copy(s, s + history, window.begin());
        for (int64_t t = 0; t < n_tokens; ++t) window[size_t(history + t)] = u[t * u_stride + c];
        const float* wc = w + c * k;
        for (int64_t t = 0; t < n_tokens; ++t) {
            float sum = 0.0f;
            for (int j = 0; j < k; ++j) sum += wc[j] * window[size_t(t + j)];
            out[t * out_stride + c] = sum;
        }
        std::copy(window.end() - history, window.end(), s);
    }
}

}  // namespace k3::kernels
