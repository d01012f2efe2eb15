// The horizontal sum shared by the AVX-512 kernels; one summation order, so that the fused
// quantized dots add up exactly like dot_f32. (GCC 12's _mm512_reduce_add_ps trips
// -Wuninitialized in its own header.) Callers are compiled for AVX-512F or more.
#pragma once

#include <immintrin.h>

namespace k3::kernels {

__attribute__((target("avx512f"))) inline float reduce_add_avx512(__m512 v) {
    const __m256 lo = _mm512_castps512_ps256(v);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    const __m256 s8 = _mm256_add_ps(lo, hi);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

}  // namespace k3::kernels
