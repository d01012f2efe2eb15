// AVX-512 VNNI × Q8_K kernels on 256-bit registers: vpdpbusd for the byte products of the
// unsigned-level formats, vpdpwssd to apply the slot scales and accumulate in one instruction
// (the lane kernels: vpmulld on each lane's slot sums).
// Only called when CPUID reports AVX-512 F/BW/VL and VNNI.
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

#include "kernels/int_dot_q8k.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#include "kernels/int_dot_q8k_simd.h"

namespace k3::kernels {
namespace {

struct VnniProducts {
    static constexpr bool kByteDots = true;
    static __m256i byte_dot(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
    static __m256i add_scaled(__m256i acc, __m256i pairs, __m256i scales) { return _mm256_dpwssd_epi32(acc, pairs, scales); }
    // The lane kernels (LaneTiles): the byte products of each 16-value slot in its own chain,
    // then its int32 scale.
    static __m256i lane_scales(__m256i scales) { return scales; }
    template <int kLargestLevel, bool kScalesPer32>
    static __m256i lane_sums(const __m256i (&q)[8], const __m256i (&a)[8], __m256i even, __m256i odd) {
        __m256i low = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q[0], a[0]);
        __m256i high = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q[4], a[4]);
        for (int k = 1; k < 4; ++k) {
            low = _mm256_dpbusd_epi32(low, q[k], a[k]);
            high = _mm256_dpbusd_epi32(high, q[k + 4], a[k + 4]);
        }
        if constexpr (kScalesPer32) return _mm256_mullo_epi32(_mm256_add_epi32(low, high), even);
        return _mm256_add_epi32(_mm256_mullo_epi32(low, even), _mm256_mullo_epi32(high, odd));
    }
};

}  // namespace

IntDotFn avx512_q8k_int_dot(tensor::Type weight) {
    return q8k_formats::with_format<IntDotFn>(weight, nullptr,
                                              []<typename F>() -> IntDotFn { return &q8k_simd::int_dot<F, VnniProducts>; });
}

IntDotTileFn avx512_q8k_int_dot_tile(tensor::Type weight) {
    return q8k_formats::with_format<IntDotTileFn>(
        weight, nullptr, []<typename F>() -> IntDotTileFn { return &q8k_simd::int_dot_tile<F, VnniProducts>; });
}

IntDotLanesFn avx512_q8k_int_dot_lanes(tensor::Type weight) {
    return q8k_formats::with_format<IntDotLanesFn>(weight, nullptr,
                                                   []<typename F>() { return q8k_simd::lanes_kernel<F, VnniProducts>(); });
}

}  // namespace k3::kernels
#pragma GCC pop_options
