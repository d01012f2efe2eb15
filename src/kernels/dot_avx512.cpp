// AVX-512 (F/BW/VL) dot kernels; compiled for that target per function and only called when
// CPUID reports it (see isa.cpp).
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/reduce_avx512.h"
#include "kernels/dot.h"
#include "tensor/float_formats.h"

#define K3_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

namespace k3::kernels {
namespace {

K3_AVX512 float dot_f32_avx512(const float* a, const float* b, int64_t n) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
    }
    if (i + 16 <= n) {
        acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
        i += 16;
    }
    if (i < n) {
        const __mmask16 m = __mmask16((1u << (n - i)) - 1);
        acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc1);
    }
    return reduce_add_avx512(_mm512_add_ps(acc0, acc1));
}

K3_AVX512 void axpy_f32_avx512(float alpha, const float* x, float* y, int64_t n) {
    const __m512 a = _mm512_set1_ps(alpha);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(a, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        const __mmask16 m = __mmask16((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m,
                              _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

K3_AVX512 float dot_row_f32(const void* row, const float* x, int64_t n) {
    return dot_f32_avx512(static_cast<const float*>(row), x, n);
}

// Widen 16 stored halves/bfloat16s to f32; `masked` handles the row tail.
K3_AVX512 inline __m512 load_f16x16(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
K3_AVX512 inline __m512 load_bf16x16(const uint16_t* p, __mmask16 m) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

template <bool kBf16>
K3_AVX512 float dot_row_half(const void* row, const float* x, int64_t n) {
    const auto* w = static_cast<const uint16_t*>(row);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 w0 = kBf16 ? load_bf16x16(w + i, 0xffff) : load_f16x16(w + i, 0xffff);
        const __m512 w1 = kBf16 ? load_bf16x16(w + i + 16, 0xffff) : load_f16x16(w + i + 16, 0xffff);
        acc0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + i), acc0);
        acc1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + i + 16), acc1);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
        const __m512 w0 = kBf16 ? load_bf16x16(w + i, m) : load_f16x16(w + i, m);
        acc0 = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x + i), acc0);
    }
    return reduce_add_avx512(_mm512_add_ps(acc0, acc1));
}

K3_AVX512 float dot_row_q8_0(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 32, block += 34) {
        uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        const __m512 q0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(block + 2))));
        const __m512 q1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(block + 18))));
        const __m512 part = _mm512_fmadd_ps(q1, _mm512_loadu_ps(x + i + 16), _mm512_mul_ps(q0, _mm512_loadu_ps(x + i)));
        acc = _mm512_fmadd_ps(_mm512_set1_ps(tensor::f16_to_f32(d_bits)), part, acc);
    }
    return reduce_add_avx512(acc);
}

K3_AVX512 float dot_row_mxfp4(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    alignas(64) float table[16];
    for (int j = 0; j < 16; ++j) table[j] = float(kMxfp4DoubledValues[j]);
    const __m512 values = _mm512_load_ps(table);
    const __m512i low_mask = _mm512_set1_epi32(15);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 32, block += 17) {
        const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(block + 1)));
        const __m512 lo = _mm512_permutexvar_ps(_mm512_and_si512(bytes, low_mask), values);
        const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), values);
        const __m512 part = _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + i + 16), _mm512_mul_ps(lo, _mm512_loadu_ps(x + i)));
        acc = _mm512_fmadd_ps(_mm512_set1_ps(mxfp4_half_scale(block[0])), part, acc);
    }
    return reduce_add_avx512(acc);
}

}  // namespace

const IsaDotKernels& avx512_dot_kernels() {
    static const IsaDotKernels k{dot_row_f32, dot_row_half<false>, dot_row_half<true>, dot_row_q8_0,
                                 dot_row_mxfp4, dot_f32_avx512, axpy_f32_avx512};
    return k;
}

}  // namespace k3::kernels
