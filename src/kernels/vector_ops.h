// Elementwise and per-row operations on f32 activations: norms, softmax, activations, the
// causal depthwise convolution. Each has a scalar definition (namespace reference) and a
// dispatching entry point that uses SIMD where the CPU has it.
#pragma once

#include <cstdint>

namespace k3::kernels {

// out = x / sqrt(mean(x^2) + eps) * w   (w may be null: weightless). out may alias x.
void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out);
// out = x / max(||x||_2, eps)   (ggml_l2_norm). out may alias x.
void l2_norm(const float* x, float eps, int64_t n, float* out);
// x = softmax(x), in place, max-subtracted.
void softmax(float* x, int64_t n);

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

// Causal depthwise convolution over time, no bias, one sequence:
//   out[t][c] = sum_{j<k} w[c][j] * u[t-k+1+j][c],  inputs before t = 0 taken from `state`.
// u: [n_tokens][channels] rows u_stride apart; w: [channels][k]; state: [channels][k-1], oldest
// first, updated to the last k-1 inputs; out: [n_tokens][channels] rows out_stride apart.
void causal_conv(const float* u, int64_t u_stride, int64_t n_tokens, int64_t channels, const float* w, int k,
                 float* state, float* out, int64_t out_stride);

inline float sigmoid(float x) { return 1.0f / (1.0f + __builtin_expf(-x)); }

}  // namespace k3::kernels
