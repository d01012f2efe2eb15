// The 8-lane f32 vector of the AVX2 level: the interface that vector_ops_simd.h and
// matmul_tile.h are written against once (simd_avx512.h has the same members for 16 lanes).
// Include it, and those templates, only between
//   #pragma GCC push_options / #pragma GCC target("avx2,fma,f16c") ... #pragma GCC pop_options
// after every system header, so that nothing but these kernels is compiled for AVX2. The types
// live in an unnamed namespace: each including file instantiates its own copies.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace k3::kernels::simd {
namespace {

struct Avx2 {
    using F = __m256;
    using Mask = __m256i;  // lanes a partial load/store touches: all bits set = lane used
    using Cond = __m256;   // a lane-wise comparison result
    static constexpr int kWidth = 8;

    static F zero() { return _mm256_setzero_ps(); }
    static F set1(float v) { return _mm256_set1_ps(v); }
    static F load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
    // The first n lanes, 0 < n < kWidth.
    static Mask tail(int64_t n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
    static F load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }  // unused lanes 0
    static F load(const float* p, Mask m, float fill) {
        return _mm256_blendv_ps(set1(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
    }
    static void store(float* p, F v, Mask m) { _mm256_maskstore_ps(p, m, v); }

    static F add(F a, F b) { return _mm256_add_ps(a, b); }
    static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static F div(F a, F b) { return _mm256_div_ps(a, b); }
    static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }  // a*b + c, one rounding
    // max/min return b where either is NaN, so max(constant, x) passes a NaN x through.
    static F max(F a, F b) { return _mm256_max_ps(a, b); }
    static F min(F a, F b) { return _mm256_min_ps(a, b); }
    static F abs(F a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
    static F sign_bit(F a) { return _mm256_and_ps(_mm256_set1_ps(-0.0f), a); }
    static F bit_xor(F a, F b) { return _mm256_xor_ps(a, b); }
    static F round(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static Cond less(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
    static Cond greater(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
    static F select(Cond c, F if_true, F if_false) { return _mm256_blendv_ps(if_false, if_true, c); }
    static bool all(Cond c) { return _mm256_movemask_ps(c) == 0xff; }

    // p * 2^n for integral n in [-126, 128], as two factors 2^(n>>1) and 2^(n-(n>>1)) that are
    // both normal, so that n = 128 (exp just below its overflow threshold) stays finite.
    static F scale_by_pow2(F p, F n) {
        const __m256i e = _mm256_cvtps_epi32(n);
        const __m256i half = _mm256_srai_epi32(e, 1);
        const __m256i bias = _mm256_set1_epi32(127);
        const F first = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
        const F second = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, half), bias), 23));
        return mul(mul(p, first), second);
    }

    static float reduce_add(F v) {
        const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
        return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
    }
    static float reduce_max(F v) {
        const __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        const __m128 t = _mm_max_ps(s, _mm_movehl_ps(s, s));
        return _mm_cvtss_f32(_mm_max_ss(t, _mm_movehdup_ps(t)));
    }

    // Sums in double (the norms and softmax of the reference sum in double).
    // (No member initializers: an implicit constructor would be compiled outside the target.)
    struct Sum {
        __m256d low, high;
    };
    static Sum sum_zero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
    static void add_to(Sum& s, F v) {
        s.low = _mm256_add_pd(s.low, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        s.high = _mm256_add_pd(s.high, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    static void add_squares_to(Sum& s, F v) {
        const __m256d low = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), high = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        s.low = _mm256_fmadd_pd(low, low, s.low);
        s.high = _mm256_fmadd_pd(high, high, s.high);
    }
    static double reduce(const Sum& s) {
        const __m256d v = _mm256_add_pd(s.low, s.high);
        const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
        return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
    }
};

}  // namespace
}  // namespace k3::kernels::simd
