// AVX-512 fused dot kernels of the legacy, K and IQ4 formats: the AVX2 unpacking of
// quant_unpack.h (inlined; AVX-512 includes AVX2), then 16 levels per FMA. Only called when
// CPUID reports AVX-512 F/BW/VL.
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/dequant.h"
#include "kernels/quant_unpack.h"

#define K3_DOT_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl")))

namespace k3::kernels {
namespace {

K3_DOT_AVX512 inline __m512 levels_to_f32(const int8_t* q) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
}

// Σ_s scale[s]·Σ_i q[i]·x[i] (+ offset[s]·Σ_i x[i]); every sub-block is 16 or 32 elements.
template <typename Format>
K3_DOT_AVX512 float dot_row(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const typename Format::BlockType*>(row);
    unpack::Unpacked u;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / Format::kBlockSize; ++b, x += Format::kBlockSize) {
        Format::unpack(block[b], u);
        for (int s = 0; s < Format::kBlockSize / Format::kSubSize; ++s) {
            __m512 qx = _mm512_setzero_ps(), sx = _mm512_setzero_ps();
            for (int i = s * Format::kSubSize; i < (s + 1) * Format::kSubSize; i += 16) {
                const __m512 xv = _mm512_loadu_ps(x + i);
                qx = _mm512_fmadd_ps(levels_to_f32(u.q + i), xv, qx);
                if constexpr (Format::kOffset) sx = _mm512_add_ps(sx, xv);
            }
            acc = _mm512_fmadd_ps(_mm512_set1_ps(u.scale[s]), qx, acc);
            if constexpr (Format::kOffset) acc = _mm512_fmadd_ps(_mm512_set1_ps(u.offset[s]), sx, acc);
        }
    }
    return _mm512_reduce_add_ps(acc);
}

}  // namespace

QuantDotFn avx512_quant_dot(tensor::Type type) {
    return unpack::with_format<QuantDotFn>(type, nullptr, []<typename F>() { return &dot_row<F>; });
}

}  // namespace k3::kernels
