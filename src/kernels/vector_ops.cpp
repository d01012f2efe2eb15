#include "kernels/vector_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace k3::kernels {
namespace reference {

namespace {
// In double as ggml sums them, so that long rows do not drift.
double sum_of_squares(const float* x, int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
    return sum;
}
}  // namespace

float rms_scale(const float* x, float eps, int64_t n) {
    return 1.0f / std::sqrt(float(sum_of_squares(x, n) / double(n)) + eps);
}

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out) {
    const float scale = rms_scale(x, eps, n);
    if (w) {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
    } else {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
    }
}

void l2_norm(const float* x, float eps, int64_t n, float* out) {
    const float scale = 1.0f / std::max(std::sqrt(float(sum_of_squares(x, n))), eps);
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

void exp(const float* x, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}

void sigmoid(const float* x, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = kernels::sigmoid(x[i]);
}

void silu(const float* x, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * kernels::sigmoid(x[i]);
}

void multiply_sigmoid(const float* gate, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] *= kernels::sigmoid(gate[i]);
}

void situ(const float* gate, const float* up, float beta, float linear_beta, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        const float gate_part = beta * std::tanh(g / beta) * kernels::sigmoid(g);
        const float up_part = linear_beta > 0.0f ? linear_beta * std::tanh(up[i] / linear_beta) : up[i];
        out[i] = gate_part * up_part;
    }
}

void decayed_dots(const float* g_i, const float* g_j, const float* k, const float* a, const float* b, int64_t n,
                  float* dot_a, float* dot_b) {
    float sum_a = 0.0f, sum_b = 0.0f;
    for (int64_t c = 0; c < n; ++c) {
        const float e = std::exp(g_i[c] - g_j[c]) * k[c];
        sum_a += a[c] * e;
        sum_b += b[c] * e;
    }
    *dot_a = sum_a;
    *dot_b = sum_b;
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

}  // namespace reference

const VectorOpsKernels* vector_ops_kernels(Isa isa) {
    static const VectorOpsKernels scalar{.rms_scale = reference::rms_scale,
                                         .rms_norm = reference::rms_norm,
                                         .l2_norm = reference::l2_norm,
                                         .softmax = reference::softmax,
                                         .exp = reference::exp,
                                         .sigmoid = reference::sigmoid,
                                         .silu = reference::silu,
                                         .multiply_sigmoid = reference::multiply_sigmoid,
                                         .situ = reference::situ,
                                         .decayed_dots = reference::decayed_dots,
                                         .causal_conv = reference::causal_conv};
    if (!isa_supported(isa)) return nullptr;
    switch (isa) {
        case Isa::scalar: return &scalar;
        case Isa::avx2: return &avx2_vector_ops();
        case Isa::avx512: return &avx512_vector_ops();
    }
    return nullptr;
}

namespace {
const VectorOpsKernels& best() {
    static const VectorOpsKernels& kernels = *vector_ops_kernels(best_isa());
    return kernels;
}
}  // namespace

float rms_scale(const float* x, float eps, int64_t n) { return best().rms_scale(x, eps, n); }
void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out) { best().rms_norm(x, w, eps, n, out); }
void l2_norm(const float* x, float eps, int64_t n, float* out) { best().l2_norm(x, eps, n, out); }
void softmax(float* x, int64_t n) { best().softmax(x, n); }
void exp(const float* x, int64_t n, float* out) { best().exp(x, n, out); }
void sigmoid(const float* x, int64_t n, float* out) { best().sigmoid(x, n, out); }
void silu(const float* x, int64_t n, float* out) { best().silu(x, n, out); }
void multiply_sigmoid(const float* gate, int64_t n, float* out) { best().multiply_sigmoid(gate, n, out); }
void situ(const float* gate, const float* up, float beta, float linear_beta, int64_t n, float* out) {
    best().situ(gate, up, beta, linear_beta, n, out);
}
void decayed_dots(const float* g_i, const float* g_j, const float* k, const float* a, const float* b, int64_t n,
                  float* dot_a, float* dot_b) {
    best().decayed_dots(g_i, g_j, k, a, b, n, dot_a, dot_b);
}
void causal_conv(const float* u, int64_t u_stride, int64_t n_tokens, int64_t channels, const float* w, int k,
                 float* state, float* out, int64_t out_stride) {
    best().causal_conv(u, u_stride, n_tokens, channels, w, k, state, out, out_stride);
}

}  // namespace k3::kernels
