// AVX2 row decoders of the formats with at most one scale per block: F16, BF16, Q8_0, MXFP4.
// The multi-token matmul decodes every weight tile through dequantize_row_kernel, so these set
// the decode cost of prefill for the common K3 files (MXFP4 experts, Q8_0/BF16 elsewhere).
// Each writes exactly the traits' values: the conversions are exact and Q8_0's d·q and MXFP4's
// value·2^e are one rounding, as in the scalar decoders. Only called when CPUID reports AVX2.
#include <immintrin.h>

#include <cstring>

#include "kernels/dequant.h"
#include "kernels/dot.h"
#include "kernels/mxfp4_avx2.h"
#include "tensor/float_formats.h"

#define K3_DECODE_AVX2 __attribute__((target("avx2,f16c")))

namespace k3::kernels {
namespace {

// F16 and BF16 rows: any length, 8 at a time then the scalar conversion for the rest.
template <bool kBf16>
K3_DECODE_AVX2 void decode_half_row(const void* row, float* out, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(row);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
        const __m256 v = kBf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16)) : _mm256_cvtph_ps(bits);
        _mm256_storeu_ps(out + i, v);
    }
    for (; i < n; ++i) out[i] = kBf16 ? tensor::bf16_to_f32(h[i]) : tensor::f16_to_f32(h[i]);
}

// Q8_0 block: f16 scale d, 32 int8 q; y = q · d.
K3_DECODE_AVX2 void decode_q8_0_row(const void* row, float* out, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    for (int64_t b = 0; b < n / 32; ++b, block += 34, out += 32) {
        uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        const __m256 d = _mm256_set1_ps(tensor::f16_to_f32(d_bits));
        for (int g = 0; g < 4; ++g) {
            const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * g));
            _mm256_storeu_ps(out + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
        }
    }
}

// MXFP4 block: E8M0 exponent e, 16 bytes of E2M1 codes (low nibbles: elements 0..15, high:
// 16..31); y = doubled value · 2^(e-128), exact.
K3_DECODE_AVX2 void decode_mxfp4_row(const void* row, float* out, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    const __m256i low_mask = _mm256_set1_epi32(15);
    for (int64_t b = 0; b < n / 32; ++b, block += 17, out += 32) {
        const __m256 d = _mm256_set1_ps(mxfp4_half_scale(block[0]));
        for (int g = 0; g < 2; ++g) {
            const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 1 + 8 * g)));
            _mm256_storeu_ps(out + 8 * g, _mm256_mul_ps(mxfp4_values_avx2(_mm256_and_si256(bytes, low_mask)), d));
            _mm256_storeu_ps(out + 16 + 8 * g, _mm256_mul_ps(mxfp4_values_avx2(_mm256_srli_epi32(bytes, 4)), d));
        }
    }
}

}  // namespace

tensor::DequantizeRow avx2_dequantize_simple_row(tensor::Type type) {
    switch (type) {
        case tensor::Type::F16: return &decode_half_row<false>;
        case tensor::Type::BF16: return &decode_half_row<true>;
        case tensor::Type::Q8_0: return &decode_q8_0_row;
        case tensor::Type::MXFP4: return &decode_mxfp4_row;
        default: return nullptr;
    }
}

}  // namespace k3::kernels
