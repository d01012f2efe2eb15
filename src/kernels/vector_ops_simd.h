// The SIMD forms of vector_ops.h, written once over a vector type V (simd_avx2.h's Avx2,
// simd_avx512.h's Avx512) and instantiated by vector_ops_avx2.cpp / vector_ops_avx512.cpp
// inside their target regions (see simd_avx2.h). Rows of any length: the last partial vector
// goes through masked loads and stores. Sums that the reference takes in double stay double.
//
// exp and tanh are polynomials of their own (the Cephes expf/tanhf coefficients). Measured
// against std::exp / std::tanh in double (VectorOpsSimd.ExpAndTanhStayWithinTwoUlp sweeps the
// ranges the kernels feed them): max relative error 1.18e-7 for exp on [-87.3, 88.7] and 1.26e-7
// for tanh on [-20, 20] (under 2 ulp); exp is +inf above 88.72 and 0 below -87.34, where
// std::exp is denormal (< 1.2e-38 absolute).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/vector_ops.h"

namespace k3::kernels::simd {

template <class V>
struct VectorMath {
    using F = typename V::F;

    // exp(x) = 2^n · exp(r),  n = round(x·log2 e),  r = x - n·ln2 in [-ln2/2, ln2/2] (ln2 split
    // in two so that n·ln2 is exact),  exp(r) ≈ 1 + r + r²·P(r).
    static F exp(F x) {
        constexpr float kOverflow = 88.72283935546875f;  // log(FLT_MAX)
        constexpr float kUnderflow = -87.33654022216797f;  // log(FLT_MIN)
        const F clamped = V::min(V::set1(kOverflow), V::max(V::set1(kUnderflow), x));
        const F n = V::round(V::mul(clamped, V::set1(1.44269504088896341f)));
        F r = V::fmadd(n, V::set1(-0.693359375f), clamped);
        r = V::fmadd(n, V::set1(2.12194440e-4f), r);
        F p = V::set1(1.9875691500e-4f);
        p = V::fmadd(p, r, V::set1(1.3981999507e-3f));
        p = V::fmadd(p, r, V::set1(8.3334519073e-3f));
        p = V::fmadd(p, r, V::set1(4.1665795894e-2f));
        p = V::fmadd(p, r, V::set1(1.6666665459e-1f));
        p = V::fmadd(p, r, V::set1(5.0000001201e-1f));
        p = V::fmadd(p, V::mul(r, r), V::add(r, V::set1(1.0f)));
        const F e = V::scale_by_pow2(p, n);
        const F inf = V::set1(std::numeric_limits<float>::infinity());
        return V::select(V::less(x, V::set1(kUnderflow)), V::zero(), V::select(V::greater(x, V::set1(kOverflow)), inf, e));
    }

    // tanh(x) = x + x·z·P(z), z = x², for |x| < 0.625 (no cancellation near 0);
    //         = sign(x)·(1 - 2 / (exp(2|x|) + 1)) beyond (exp → inf gives exactly ±1). A vector
    // whose lanes are all small skips the exp and the divide: situ's up branch (u / 25) nearly
    // always is.
    static F tanh(F x) {
        const F z = V::mul(x, x);
        F p = V::set1(-5.70498872745e-3f);
        p = V::fmadd(p, z, V::set1(2.06390887954e-2f));
        p = V::fmadd(p, z, V::set1(-5.37397155531e-2f));
        p = V::fmadd(p, z, V::set1(1.33314422036e-1f));
        p = V::fmadd(p, z, V::set1(-3.33332819422e-1f));
        const F small = V::fmadd(V::mul(x, z), p, x);
        const F a = V::abs(x);
        const typename V::Cond is_small = V::less(a, V::set1(0.625f));
        if (V::all(is_small)) return small;
        const F one = V::set1(1.0f);
        const F large = V::sub(one, V::div(V::set1(2.0f), V::add(exp(V::add(a, a)), one)));
        return V::select(is_small, small, V::bit_xor(large, V::sign_bit(x)));
    }

    // sigmoid(x) = 1 / (1 + exp(-x))
    static F sigmoid(F x) {
        const F one = V::set1(1.0f);
        return V::div(one, V::add(one, exp(V::sub(V::zero(), x))));
    }
};

template <class V>
struct VectorOps {
    using F = typename V::F;
    using M = VectorMath<V>;

    // out[i] = fn(in[i]...) for i < n, one vector at a time; out may alias an input.
    template <class Fn, class... In>
    static void map(int64_t n, float* out, Fn fn, const In*... in) {
        int64_t i = 0;
        for (; i + V::kWidth <= n; i += V::kWidth) V::store(out + i, fn(V::load(in + i)...));
        if (i < n) {
            const typename V::Mask m = V::tail(n - i);
            V::store(out + i, fn(V::load(in + i, m)...), m);
        }
    }

    static double sum_of_squares(const float* x, int64_t n) {
        typename V::Sum sum = V::sum_zero();
        int64_t i = 0;
        for (; i + V::kWidth <= n; i += V::kWidth) V::add_squares_to(sum, V::load(x + i));
        if (i < n) V::add_squares_to(sum, V::load(x + i, V::tail(n - i)));
        return V::reduce(sum);
    }

    static float rms_scale(const float* x, float eps, int64_t n) {
        return 1.0f / __builtin_sqrtf(float(sum_of_squares(x, n) / double(n)) + eps);
    }

    // out = x * rms_scale(x) * w
    static void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out) {
        const F scale = V::set1(rms_scale(x, eps, n));
        if (w) {
            map(n, out, [&](F xv, F wv) { return V::mul(V::mul(xv, scale), wv); }, x, w);
        } else {
            map(n, out, [&](F xv) { return V::mul(xv, scale); }, x);
        }
    }

    // out = x / max(||x||_2, eps)
    static void l2_norm(const float* x, float eps, int64_t n, float* out) {
        const float norm = __builtin_sqrtf(float(sum_of_squares(x, n)));
        const F scale = V::set1(1.0f / (norm < eps ? eps : norm));  // std::max(norm, eps)
        map(n, out, [&](F xv) { return V::mul(xv, scale); }, x);
    }

    // x = exp(x - max) / sum(exp(x - max)); unused tail lanes load -inf, whose exp is 0.
    static void softmax(float* x, int64_t n) {
        if (n <= 0) return;
        const float minus_inf = -std::numeric_limits<float>::infinity();
        F running_max = V::set1(minus_inf);
        int64_t i = 0;
        for (; i + V::kWidth <= n; i += V::kWidth) running_max = V::max(running_max, V::load(x + i));
        if (i < n) running_max = V::max(running_max, V::load(x + i, V::tail(n - i), minus_inf));
        const F max = V::set1(V::reduce_max(running_max));
        typename V::Sum sum = V::sum_zero();
        for (i = 0; i + V::kWidth <= n; i += V::kWidth) {
            const F e = M::exp(V::sub(V::load(x + i), max));
            V::store(x + i, e);
            V::add_to(sum, e);
        }
        if (i < n) {
            const typename V::Mask m = V::tail(n - i);
            const F e = M::exp(V::sub(V::load(x + i, m, minus_inf), max));
            V::store(x + i, e, m);
            V::add_to(sum, e);
        }
        const F inv = V::set1(float(1.0 / V::reduce(sum)));
        map(n, x, [&](F v) { return V::mul(v, inv); }, x);
    }

    static void exp(const float* x, int64_t n, float* out) {
        map(n, out, [&](F v) { return M::exp(v); }, x);
    }

    static void sigmoid(const float* x, int64_t n, float* out) {
        map(n, out, [&](F v) { return M::sigmoid(v); }, x);
    }

    // out = x * sigmoid(x)
    static void silu(const float* x, int64_t n, float* out) {
        map(n, out, [&](F v) { return V::mul(v, M::sigmoid(v)); }, x);
    }

    // out *= sigmoid(gate)
    static void multiply_sigmoid(const float* gate, int64_t n, float* out) {
        map(n, out, [&](F g, F o) { return V::mul(o, M::sigmoid(g)); }, gate, static_cast<const float*>(out));
    }

    // out = [beta·tanh(g/beta)·sigmoid(g)] · [lambda·tanh(u/lambda)]   (u alone if lambda <= 0)
    static void situ(const float* gate, const float* up, float beta, float linear_beta, int64_t n, float* out) {
        const F b = V::set1(beta), lambda = V::set1(linear_beta);
        map(n, out, [&](F g, F u) {
            const F gate_part = V::mul(V::mul(b, M::tanh(V::div(g, b))), M::sigmoid(g));
            const F up_part = linear_beta > 0.0f ? V::mul(lambda, M::tanh(V::div(u, lambda))) : u;
            return V::mul(gate_part, up_part);
        }, gate, up);
    }

    static void decayed_dots(const float* g_i, const float* g_j, const float* k, const float* a, const float* b,
                             int64_t n, float* dot_a, float* dot_b) {
        F sum_a = V::zero(), sum_b = V::zero();
        const auto add = [&](F gi, F gj, F kv, F av, F bv) {
            const F e = V::mul(M::exp(V::sub(gi, gj)), kv);
            sum_a = V::fmadd(av, e, sum_a);
            sum_b = V::fmadd(bv, e, sum_b);
        };
        int64_t c = 0;
        for (; c + V::kWidth <= n; c += V::kWidth)
            add(V::load(g_i + c), V::load(g_j + c), V::load(k + c), V::load(a + c), V::load(b + c));
        if (c < n) {  // unused lanes: k is 0
            const typename V::Mask m = V::tail(n - c);
            add(V::load(g_i + c, m), V::load(g_j + c, m), V::load(k + c, m), V::load(a + c, m), V::load(b + c, m));
        }
        *dot_a = V::reduce_add(sum_a);
        *dot_b = V::reduce_add(sum_b);
    }

    // Causal depthwise conv (vector_ops.h), V::kWidth channels at a time: each channel block's
    // taps and state are transposed to [j][lane] so that every tap is one vector FMA per token.
    static void causal_conv(const float* u, int64_t u_stride, int64_t n_tokens, int64_t channels, const float* w,
                            int k, float* state, float* out, int64_t out_stride) {
        constexpr int W = V::kWidth;
        const int history = k - 1;
        if (n_tokens == 1) {
            // Decode: each channel alone (its taps and state are contiguous), in the lanes' fused
            // order. Transposing a block's taps and state into lanes costs more than one token's
            // products: 12 µs a call, the longest step the main thread ran alone in a decode step.
            // K3's width of 4 as a constant, so that the channel's loops unroll.
            const auto one_token = [&](auto width) {
                const int taps = width, past_taps = taps - 1;
                for (int64_t c = 0; c < channels; ++c) {
                    const float* wc = w + c * taps;
                    float* past = state + c * past_taps;
                    const float x = u[c];
                    float sum = 0.0f;
                    for (int j = 0; j < past_taps; ++j) sum = std::fma(wc[j], past[j], sum);
                    out[c] = std::fma(wc[past_taps], x, sum);
                    for (int j = 0; j + 1 < past_taps; ++j) past[j] = past[j + 1];
                    if (past_taps > 0) past[past_taps - 1] = x;
                }
            };
            if (k == 4) one_token(std::integral_constant<int, 4>{});
            else one_token(k);
            return;
        }
        std::vector<float> taps(size_t(k) * W);           // [k][W]: w[c][j] of the block's channels
        std::vector<float> past(size_t(history) * W);     // [k-1][W]: the state, oldest first
        for (int64_t c0 = 0; c0 < channels; c0 += W) {
            const int lanes = int(channels - c0 < W ? channels - c0 : W);
            const typename V::Mask m = V::tail(lanes < W ? lanes : 1);
            const auto load_lanes = [&](const float* p) { return lanes == W ? V::load(p) : V::load(p, m); };
            for (int lane = 0; lane < W; ++lane)
                for (int j = 0; j < k; ++j) {
                    const bool used = lane < lanes;
                    taps[size_t(j * W + lane)] = used ? w[(c0 + lane) * k + j] : 0.0f;
                    if (j < history) past[size_t(j * W + lane)] = used ? state[(c0 + lane) * history + j] : 0.0f;
                }
            // The input at time s (s < 0: from the state) of this block's channels.
            const auto input = [&](int64_t s) { return s < 0 ? V::load(&past[size_t((s + history) * W)]) : load_lanes(u + s * u_stride + c0); };
            for (int64_t t = 0; t < n_tokens; ++t) {
                F sum = V::zero();
                for (int j = 0; j < k; ++j) sum = V::fmadd(V::load(&taps[size_t(j * W)]), input(t - history + j), sum);
                if (lanes == W) V::store(out + t * out_stride + c0, sum);
                else V::store(out + t * out_stride + c0, sum, m);
            }
            // The new state: the last k-1 inputs (read before any is overwritten: past is a copy).
            alignas(64) float last[W];
            for (int j = 0; j < history; ++j) {
                V::store(last, input(n_tokens - history + j));
                for (int lane = 0; lane < lanes; ++lane) state[(c0 + lane) * history + j] = last[lane];
            }
        }
    }
};

// The dispatch table of one level: every entry point of VectorOps<V>.
template <class V>
VectorOpsKernels vector_ops_table() {
    using Ops = VectorOps<V>;
    return {.rms_scale = Ops::rms_scale,
            .rms_norm = Ops::rms_norm,
            .l2_norm = Ops::l2_norm,
            .softmax = Ops::softmax,
            .exp = Ops::exp,
            .sigmoid = Ops::sigmoid,
            .silu = Ops::silu,
            .multiply_sigmoid = Ops::multiply_sigmoid,
            .situ = Ops::situ,
            .decayed_dots = Ops::decayed_dots,
            .causal_conv = Ops::causal_conv};
}

}  // namespace k3::kernels::simd
