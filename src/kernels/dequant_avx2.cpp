// AVX2 decoders and fused dot kernels of the legacy, K and IQ4 formats, each written once over
// the unpacked shape of quant_unpack.h. Only called when CPUID reports AVX2 (+FMA for the dots).
#include "kernels/dequant.h"
#include "kernels/quant_unpack.h"

// Decoding is compiled without FMA so that scale·q + offset rounds twice, as the scalar decoders do.
#define K3_DECODE_AVX2 __attribute__((target("avx2")))
#define K3_DOT_AVX2 __attribute__((target("avx2,fma")))

namespace k3::kernels {
namespace {

using unpack::Unpacked;

// 8 levels -> 8 floats (exact).
K3_DECODE_AVX2 inline __m256 levels_to_f32(const int8_t* q) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
}

// y[i] = scale[s]·q[i] (+ offset[s]) for every element of a block.
template <typename Format>
K3_DECODE_AVX2 void decode_row(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const typename Format::BlockType*>(blocks);
    Unpacked u;
    for (int64_t b = 0; b < n / Format::kBlockSize; ++b, out += Format::kBlockSize) {
        Format::unpack(block[b], u);
        for (int s = 0; s < Format::kBlockSize / Format::kSubSize; ++s) {
            const __m256 scale = _mm256_set1_ps(u.scale[s]);
            for (int i = s * Format::kSubSize; i < (s + 1) * Format::kSubSize; i += 8) {
                __m256 v = _mm256_mul_ps(scale, levels_to_f32(u.q + i));
                if constexpr (Format::kOffset) v = _mm256_add_ps(v, _mm256_set1_ps(u.offset[s]));
                _mm256_storeu_ps(out + i, v);
            }
        }
    }
}

K3_DOT_AVX2 inline float horizontal_sum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// Σ_s scale[s]·Σ_i q[i]·x[i] (+ offset[s]·Σ_i x[i]): the levels are never scaled one by one.
template <typename Format>
K3_DOT_AVX2 float dot_row(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const typename Format::BlockType*>(row);
    Unpacked u;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / Format::kBlockSize; ++b, x += Format::kBlockSize) {
        Format::unpack(block[b], u);
        for (int s = 0; s < Format::kBlockSize / Format::kSubSize; ++s) {
            __m256 qx = _mm256_setzero_ps(), sx = _mm256_setzero_ps();
            for (int i = s * Format::kSubSize; i < (s + 1) * Format::kSubSize; i += 8) {
                const __m256 xv = _mm256_loadu_ps(x + i);
                qx = _mm256_fmadd_ps(levels_to_f32(u.q + i), xv, qx);
                if constexpr (Format::kOffset) sx = _mm256_add_ps(sx, xv);
            }
            acc = _mm256_fmadd_ps(_mm256_set1_ps(u.scale[s]), qx, acc);
            if constexpr (Format::kOffset) acc = _mm256_fmadd_ps(_mm256_set1_ps(u.offset[s]), sx, acc);
        }
    }
    return horizontal_sum(acc);
}

}  // namespace

tensor::DequantizeRow avx2_dequantize_row(tensor::Type type) {
    return unpack::with_format<tensor::DequantizeRow>(type, nullptr, []<typename F>() { return &decode_row<F>; });
}

QuantDotFn avx2_quant_dot(tensor::Type type) {
    return unpack::with_format<QuantDotFn>(type, nullptr, []<typename F>() { return &dot_row<F>; });
}

}  // namespace k3::kernels
