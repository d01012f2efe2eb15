// AVX2 + FMA + F16C dot kernels; compiled for that target per function and only called when
// CPUID reports it (see isa.cpp).
#include <immintrin.h>

#include <cstring>

#include "kernels/dot.h"
#include "kernels/mxfp4_avx2.h"
#include "tensor/float_formats.h"

#define K3_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace k3::kernels {
namespace {

K3_AVX2 inline float horizontal_sum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

K3_AVX2 float dot_f32_avx2(const float* a, const float* b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    if (i + 8 <= n) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        i += 8;
    }
    float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

K3_AVX2 void axpy_f32_avx2(float alpha, const float* x, float* y, int64_t n) {
    const __m256 a = _mm256_set1_ps(alpha);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += alpha * x[i];
}

K3_AVX2 float dot_row_f32(const void* row, const float* x, int64_t n) {
    return dot_f32_avx2(static_cast<const float*>(row), x, n);
}

K3_AVX2 inline __m256 load_f16x8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
K3_AVX2 inline __m256 load_bf16x8(const uint16_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

template <bool kBf16>
K3_AVX2 float dot_row_half(const void* row, const float* x, int64_t n) {
    const auto* w = static_cast<const uint16_t*>(row);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 w0 = kBf16 ? load_bf16x8(w + i) : load_f16x8(w + i);
        const __m256 w1 = kBf16 ? load_bf16x8(w + i + 8) : load_f16x8(w + i + 8);
        acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), acc0);
        acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), acc1);
    }
    float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += (kBf16 ? tensor::bf16_to_f32(w[i]) : tensor::f16_to_f32(w[i])) * x[i];
    return sum;
}

K3_AVX2 float dot_row_q8_0(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 32, block += 34) {
        uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        __m256 part = _mm256_setzero_ps();
        for (int g = 0; g < 4; ++g) {
            const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(block + 2 + 8 * g))));
            part = _mm256_fmadd_ps(q, _mm256_loadu_ps(x + i + 8 * g), part);
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(tensor::f16_to_f32(d_bits)), part, acc);
    }
    return horizontal_sum(acc);
}

K3_AVX2 float dot_row_mxfp4(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    const __m256i low_mask = _mm256_set1_epi32(15);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 32, block += 17) {
        __m256 part = _mm256_setzero_ps();
        for (int g = 0; g < 2; ++g) {
            const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(block + 1 + 8 * g)));
            const __m256 lo = mxfp4_values_avx2(_mm256_and_si256(bytes, low_mask));
            const __m256 hi = mxfp4_values_avx2(_mm256_srli_epi32(bytes, 4));
            part = _mm256_fmadd_ps(lo, _mm256_loadu_ps(x + i + 8 * g), part);
            part = _mm256_fmadd_ps(hi, _mm256_loadu_ps(x + i + 16 + 8 * g), part);
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(mxfp4_half_scale(block[0])), part, acc);
    }
    return horizontal_sum(acc);
}

}  // namespace

const IsaDotKernels& avx2_dot_kernels() {
    static const IsaDotKernels k{dot_row_f32, dot_row_half<false>, dot_row_half<true>, dot_row_q8_0,
                                 dot_row_mxfp4, dot_f32_avx2, axpy_f32_avx2};
    return k;
}

}  // namespace k3::kernels
