// AVX-512 fused dot kernels of the legacy, K, IQ and ternary formats: the AVX2 unpacking of
// quant_unpack.h (inlined; AVX-512 includes AVX2), then 16 weights per FMA. Only called when
// CPUID reports AVX-512 F/BW/VL.
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/reduce_avx512.h"
#include "kernels/dequant.h"
#include "kernels/quant_unpack.h"
#include "tensor/no_fp_contract.h"

#define K3_DOT_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl")))

namespace k3::kernels {
namespace {

// Elements i..i+15 of an unpacked block as f32, rounded as the scalar decoders round
// (multiply, then add; never fused): the values the AVX2 decoders write.
template <typename Format>
K3_DOT_AVX512 inline __m512 weights16(const unpack::Unpacked& u, int i) {
    const int s = i / Format::kSubSize;
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u.q + i))));
    const __m512 w = _mm512_mul_ps(_mm512_set1_ps(u.scale[s]), q);
    if constexpr (Format::kOffset) return _mm512_add_ps(w, _mm512_set1_ps(u.offset[s]));
    return w;
}

// Decodes in registers and accumulates exactly as dot_f32 over the decoded row does (elements
// 32k..32k+15 into one accumulator, 32k+16..32k+31 into the other): bit-identical to decoding
// the row and calling dot_f32.
template <typename Format>
K3_DOT_AVX512 float dot_row(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const typename Format::BlockType*>(row);
    unpack::Unpacked u;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / Format::kBlockSize; ++b, x += Format::kBlockSize) {
        Format::unpack(block[b], u);
        for (int i = 0; i < Format::kBlockSize; i += 32) {
            acc0 = _mm512_fmadd_ps(weights16<Format>(u, i), _mm512_loadu_ps(x + i), acc0);
            acc1 = _mm512_fmadd_ps(weights16<Format>(u, i + 16), _mm512_loadu_ps(x + i + 16), acc1);
        }
    }
    return reduce_add_avx512(_mm512_add_ps(acc0, acc1));
}

}  // namespace

QuantDotFn avx512_quant_dot(tensor::Type type) {
    return unpack::with_format<QuantDotFn>(type, nullptr, []<typename F>() { return &dot_row<F>; });
}

}  // namespace k3::kernels
