// AVX2 decoders and fused dot kernels of the legacy, K, IQ and ternary formats, each written
// once over the unpacked shape of quant_unpack.h. Only called when CPUID reports AVX2 (+FMA for
// the dots).
#include "kernels/dequant.h"
#include "kernels/quant_unpack.h"
#include "tensor/no_fp_contract.h"

#define K3_DECODE_AVX2 __attribute__((target("avx2")))
#define K3_DOT_AVX2 __attribute__((target("avx2,fma")))

namespace k3::kernels {
namespace {

using unpack::Unpacked;

// Elements i..i+7 of an unpacked block as f32: scale·q (+ offset) of their sub-block, rounded
// exactly as the scalar decoders round (a multiply, then an add; never fused).
template <typename Format>
K3_DECODE_AVX2 inline __m256 weights8(const Unpacked& u, int i) {
    const int s = i / Format::kSubSize;
    const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(u.q + i))));
    const __m256 w = _mm256_mul_ps(_mm256_set1_ps(u.scale[s]), q);
    if constexpr (Format::kOffset) return _mm256_add_ps(w, _mm256_set1_ps(u.offset[s]));
    return w;
}

template <typename Format>
K3_DECODE_AVX2 void decode_row(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const typename Format::BlockType*>(blocks);
    Unpacked u;
    for (int64_t b = 0; b < n / Format::kBlockSize; ++b, out += Format::kBlockSize) {
        Format::unpack(block[b], u);
        for (int i = 0; i < Format::kBlockSize; i += 8) _mm256_storeu_ps(out + i, weights8<Format>(u, i));
    }
}

// The reduction of dot_avx2.cpp's dot_f32, in the same order.
K3_DOT_AVX2 inline float horizontal_sum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// Decodes in registers and accumulates exactly as dot_f32 over the decoded row does (elements
// 16k..16k+7 into one accumulator, 16k+8..16k+15 into the other), so one token through this
// kernel and several through decoded tiles give bit-identical products.
template <typename Format>
K3_DOT_AVX2 float dot_row(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const typename Format::BlockType*>(row);
    Unpacked u;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / Format::kBlockSize; ++b, x += Format::kBlockSize) {
        Format::unpack(block[b], u);
        for (int i = 0; i < Format::kBlockSize; i += 16) {
            acc0 = _mm256_fmadd_ps(weights8<Format>(u, i), _mm256_loadu_ps(x + i), acc0);
            acc1 = _mm256_fmadd_ps(weights8<Format>(u, i + 8), _mm256_loadu_ps(x + i + 8), acc1);
        }
    }
    return horizontal_sum(_mm256_add_ps(acc0, acc1));
}

}  // namespace

tensor::DequantizeRow avx2_dequantize_row(tensor::Type type) {
    return unpack::with_format<tensor::DequantizeRow>(type, nullptr, []<typename F>() { return &decode_row<F>; });
}

QuantDotFn avx2_quant_dot(tensor::Type type) {
    return unpack::with_format<QuantDotFn>(type, nullptr, []<typename F>() { return &dot_row<F>; });
}

}  // namespace k3::kernels
