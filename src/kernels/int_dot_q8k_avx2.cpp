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
    // The lane kernels (LaneTiles): a lane's int16 scale in both of its halves, so that madd
    // applies it to maddubs' two pair sums; kRun pair sums (each at most 2·kLargestLevel·127) are
    // added in int16 first, as many as stay under 2^15 within one scale's products.
    static __m256i lane_scales(__m256i scales) {
        return _mm256_or_si256(_mm256_and_si256(scales, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(scales, 16));
    }
    template <int kLargestLevel, bool kScalesPer32>
    static __m256i lane_sums(__m256i acc, const __m256i (&q)[8], const __m256i (&a)[8], __m256i even, __m256i odd) {
        constexpr int kSpan = kScalesPer32 ? 8 : 4;  // products under one scale
        constexpr int kRun = [] {
            int run = kSpan;
            while (run > 1 && run * 2 * kLargestLevel * 127 > INT16_MAX) run /= 2;
            return run;
        }();
        __m256i sums = acc;
        for (int k0 = 0; k0 < 8; k0 += kRun) {
            __m256i pairs = _mm256_maddubs_epi16(q[k0], a[k0]);
            for (int k = k0 + 1; k < k0 + kRun; ++k) pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(q[k], a[k]));
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, k0 < 4 ? even : odd));
        }
        return sums;
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

IntDotLanesFn avx2_q8k_int_dot_lanes(tensor::Type weight) {
    return q8k_formats::with_format<IntDotLanesFn>(weight, nullptr,
                                                   []<typename F>() { return q8k_simd::lanes_kernel<F, Avx2Products>(); });
}

}  // namespace k3::kernels
#pragma GCC pop_options
