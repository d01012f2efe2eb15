// AVX2 × Q8_K kernels: 32 products at a time by maddubs (|q| as unsigned times a with q's sign)
// and madd. Only called when CPUID reports AVX2.
#include <immintrin.h>

#include <cstdint>

#include "kernels/int_dot_q8k.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/int_dot_q8k_fused_simd.h"
#include "kernels/int_dot_q8k_simd.h"

namespace k3::kernels {
namespace {

struct Avx2Products {
    static __m256i of(__m256i q, __m256i a) {
        // |q| <= 127 and |a| <= 127: each pair sum fits int16 without saturating.
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
        return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    }
    static constexpr bool kByteDots = false;
    static __m256i add_scaled(__m256i acc, __m256i pairs, __m256i scales) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scales));
    }
};

}  // namespace

IntDotFn avx2_q8k_int_dot(tensor::Type weight) {
    if (IntDotFn fused = q8k_formats::with_fused_format<IntDotFn>(
            weight, nullptr, []<typename F>() -> IntDotFn { return &q8k_fused::int_dot<F, Avx2Products>; }))
        return fused;
    return unpack::with_format<IntDotFn>(weight, nullptr, []<typename F>() -> IntDotFn {
        if constexpr (F::kBlockSize == 256) return &q8k_simd::int_dot<F, Avx2Products>;
        else return nullptr;
    });
}

IntDotTileFn avx2_q8k_int_dot_tile(tensor::Type weight) {
    if (IntDotTileFn fused = q8k_formats::with_fused_format<IntDotTileFn>(
            weight, nullptr, []<typename F>() -> IntDotTileFn { return &q8k_fused::int_dot_tile<F, Avx2Products>; }))
        return fused;
    return unpack::with_format<IntDotTileFn>(weight, nullptr, []<typename F>() -> IntDotTileFn {
        if constexpr (F::kBlockSize == 256) return &q8k_simd::int_dot_tile<F, Avx2Products>;
        else return nullptr;
    });
}

}  // namespace k3::kernels
#pragma GCC pop_options
