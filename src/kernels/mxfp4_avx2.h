// E2M1 codes to ggml's doubled MXFP4 values on eight 32-bit lanes, shared by the AVX2 dot kernel
// (dot_avx2.cpp) and the AVX2 row decoder (dequant_simple_avx2.cpp). Callers are compiled for
// AVX2 or more.
#pragma once

#include <immintrin.h>

namespace k3::kernels {

// ggml's table {0,1,2,3,4,6,8,12, 0,-1,-2,-3,-4,-6,-8,-12} (code 8 is +0, as there): the low
// three bits pick the magnitude, bit 3 (shifted to the sign bit) the half of the table.
__attribute__((target("avx2"))) inline __m256 mxfp4_values_avx2(__m256i codes) {
    const __m256 positive = _mm256_permutevar8x32_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 6, 8, 12), codes);
    const __m256 negative = _mm256_permutevar8x32_ps(_mm256_setr_ps(0, -1, -2, -3, -4, -6, -8, -12), codes);
    return _mm256_blendv_ps(positive, negative, _mm256_castsi256_ps(_mm256_slli_epi32(codes, 28)));
}

}  // namespace k3::kernels
