// AVX2 × Q8_K kernels: maddubs for the byte products, madd to apply the slot scales to its pair
// sums. Only called when CPUID reports AVX2.
#include <immintrin.h>

#include <cstdint>

#include "kernels/int_dot_q8k.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/int_dot_q8k_simd.h"

namespace k3::kernels {
namespace {

struct Avx2Products {
    static constexpr bool kByteDots = false;
    static __m256i add_scaled(__m256i acc, __m256i pairs, __m256i scales) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scales));
    }
};

}  // namespace

IntDotFn avx2_q8k_int_dot(tensor::Type weight) {
    return q8k_formats::with_format<IntDotFn>(weight, nullptr,
                                              []<typename F>() -> IntDotFn { return &q8k_simd::int_dot<F, Avx2Products>; });
}

IntDotTileFn avx2_q8k_int_dot_tile(tensor::Type weight) {
    return q8k_formats::with_format<IntDotTileFn>(
        weight, nullptr, []<typename F>() -> IntDotTileFn { return &q8k_simd::int_dot_tile<F, Avx2Products>; });
}

}  // namespace k3::kernels
#pragma GCC pop_options
