// Elementwise and per-row operations on f32 activations: norms, softmax, activations, the
// causal depthwise convolution. Each has a scalar definition (namespace reference) and a
// dispatching entry point that uses the best level this CPU has (isa.h; K3_ISA caps it).
#pragma once

#include <cstdint>

#include "kernels/isa.h"

namespace k3::kernels {

// 1 / sqrt(mean(x^2) + eps), the sum in double: rms_norm's scale.
float rms_scale(const float* x, float eps, int64_t n);
// out = x * rms_scale(x) * w   (w may be null: weightless). out may alias x.
void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out);
// out = x / max(||x||_2, eps)   (ggml_l2_norm). out may alias x.
void l2_norm(const float* x, float eps, int64_t n, float* out);
// x = softmax(x), in place, max-subtracted.
void softmax(float* x, int64_t n);

// out[i] = exp(x[i]); out may alias x. (SIMD levels: a polynomial within 2 ulp, vector_ops_simd.h.)
void exp(const float* x, int64_t n, float* out);
inline float sigmoid(float x);
// out[i] = sigmoid(x[i]); out may alias x.
void sigmoid(const float* x, int64_t n, float* out);
// out[i] = x[i] * sigmoid(x[i]); out may alias x.
void silu(const float* x, int64_t n, float* out);
// out[i] *= sigmoid(gate[i])
void multiply_sigmoid(const float* gate, int64_t n, float* out);
// SiTU-GLU: out = [beta*tanh(g/beta)*sigmoid(g)] * [lambda*tanh(u/lambda)]   (u alone if lambda <= 0).
// out may alias gate or up.
void situ(const float* gate, const float* up, float beta, float linear_beta, int64_t n, float* out);

// KDA's decayed products of two rows with a key: with e = exp(g_i - g_j) ⊙ k (each difference
// <= 0 where g are cumulative log-decays), *dot_a = a · e and *dot_b = b · e.
void decayed_dots(const float* g_i, const float* g_j, const float* k, const float* a, const float* b, int64_t n,
                  float* dot_a, float* dot_b);

// Causal depthwise convolution over time, no bias, one sequence:
//   out[t][c] = sum_{j<k} w[c][j] * u[t-k+1+j][c],  inputs before t = 0 taken from `state`.
// u: [n_tokens][channels] rows u_stride apart; w: [channels][k]; state: [channels][k-1], oldest
// first, updated to the last k-1 inputs; out: [n_tokens][channels] rows out_stride apart.
// out must not overlap u.
void causal_conv(const float* u, int64_t u_stride, int64_t n_tokens, int64_t channels, const float* w, int k,
                 float* state, float* out, int64_t out_stride);

// The scalar definitions, which the SIMD levels are tested against and K3_ISA=scalar runs.
namespace reference {
float rms_scale(const float* x, float eps, int64_t n);
void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out);
void l2_norm(const float* x, float eps, int64_t n, float* out);
void softmax(float* x, int64_t n);
void exp(const float* x, int64_t n, float* out);
void sigmoid(const float* x, int64_t n, float* out);
void silu(const float* x, int64_t n, float* out);
void multiply_sigmoid(const float* gate, int64_t n, float* out);
void situ(const float* gate, const float* up, float beta, float linear_beta, int64_t n, float* out);
void decayed_dots(const float* g_i, const float* g_j, const float* k, const float* a, const float* b, int64_t n,
                  float* dot_a, float* dot_b);
void causal_conv(const float* u, int64_t u_stride, int64_t n_tokens, int64_t channels, const float* w, int k,
                 float* state, float* out, int64_t out_stride);
}  // namespace reference

// One level's implementations (vector_ops.cpp: scalar; vector_ops_avx2.cpp, vector_ops_avx512.cpp).
struct VectorOpsKernels {
    decltype(&reference::rms_scale) rms_scale;
    decltype(&reference::rms_norm) rms_norm;
    decltype(&reference::l2_norm) l2_norm;
    decltype(&reference::softmax) softmax;
    decltype(&reference::exp) exp;
    decltype(&reference::sigmoid) sigmoid;
    decltype(&reference::silu) silu;
    decltype(&reference::multiply_sigmoid) multiply_sigmoid;
    decltype(&reference::situ) situ;
    decltype(&reference::decayed_dots) decayed_dots;
    decltype(&reference::causal_conv) causal_conv;
};
// The kernels of `isa`; null if this CPU lacks it.
const VectorOpsKernels* vector_ops_kernels(Isa isa);
const VectorOpsKernels& avx2_vector_ops();
const VectorOpsKernels& avx512_vector_ops();

inline float sigmoid(float x) { return 1.0f / (1.0f + __builtin_expf(-x)); }

}  // namespace k3::kernels
