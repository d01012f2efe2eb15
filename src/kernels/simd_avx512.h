// The 16-lane f32 vector of the AVX-512 level (F/BW/VL): the same members as simd_avx2.h's Avx2,
// for the templates written once over them. Include it only between
//   #pragma GCC push_options / #pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
//   ... #pragma GCC pop_options
// after every system header. The types live in an unnamed namespace: each including file
// instantiates its own copies.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/reduce_avx512.h"

namespace k3::kernels::simd {
namespace {

struct Avx512 {
    using F = __m512;
    using Mask = __mmask16;
    using Cond = __mmask16;
    static constexpr int kWidth = 16;

    static F zero() { return _mm512_setzero_ps(); }
    static F set1(float v) { return _mm512_set1_ps(v); }
    static F load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
    // The first n lanes, 0 < n < kWidth.
    static Mask tail(int64_t n) { return Mask((1u << n) - 1); }
    static F load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }  // unused lanes 0
    static F load(const float* p, Mask m, float fill) { return _mm512_mask_loadu_ps(set1(fill), m, p); }
    static void store(float* p, F v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }

    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F div(F a, F b) { return _mm512_div_ps(a, b); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }  // a*b + c, one rounding
    // max/min return b where either is NaN, so max(constant, x) passes a NaN x through.
    static F max(F a, F b) { return _mm512_max_ps(a, b); }
    static F min(F a, F b) { return _mm512_min_ps(a, b); }
    static F abs(F a) { return _mm512_abs_ps(a); }
    // Bitwise ops through the integer unit (their _ps forms need AVX512DQ).
    static F sign_bit(F a) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN))); }
    static F bit_xor(F a, F b) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_castps_si512(b))); }
    static F round(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static Cond less(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
    static Cond greater(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
    static F select(Cond c, F if_true, F if_false) { return _mm512_mask_blend_ps(c, if_false, if_true); }
    static bool all(Cond c) { return c == 0xffff; }

    // p * 2^n for integral n (scalef handles the whole exponent range without overflow in between).
    static F scale_by_pow2(F p, F n) { return _mm512_scalef_ps(p, n); }

    static float reduce_add(F v) { return reduce_add_avx512(v); }
    static float reduce_max(F v) {
        const __m256 s8 = _mm256_max_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        const __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
        const __m128 s2 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
        return _mm_cvtss_f32(_mm_max_ss(s2, _mm_movehdup_ps(s2)));
    }

    // Sums in double (the norms and softmax of the reference sum in double).
    // (No member initializers: an implicit constructor would be compiled outside the target.)
    struct Sum {
        __m512d low, high;
    };
    static Sum sum_zero() { return {_mm512_setzero_pd(), _mm512_setzero_pd()}; }
    static void add_to(Sum& s, F v) {
        s.low = _mm512_add_pd(s.low, _mm512_cvtps_pd(low_half(v)));
        s.high = _mm512_add_pd(s.high, _mm512_cvtps_pd(high_half(v)));
    }
    static void add_squares_to(Sum& s, F v) {
        const __m512d low = _mm512_cvtps_pd(low_half(v)), high = _mm512_cvtps_pd(high_half(v));
        s.low = _mm512_fmadd_pd(low, low, s.low);
        s.high = _mm512_fmadd_pd(high, high, s.high);
    }
    static double reduce(const Sum& s) {
        const __m512d v = _mm512_add_pd(s.low, s.high);
        const __m256d q = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
        const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd(q, 1));
        return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
    }

private:
    static __m256 low_half(F v) { return _mm512_castps512_ps256(v); }
    static __m256 high_half(F v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }
};

}  // namespace
}  // namespace k3::kernels::simd
