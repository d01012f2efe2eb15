// AVX-512 VNNI × Q8_K kernels: vpdpbusd for the byte products of the unsigned-level formats,
// vpdpwssd to apply the slot scales and accumulate in one instruction (the lane kernels: vpmulld
// on each lane's slot sums). Decode's tiles on 256-bit registers; prefill's lane kernels on
// 512-bit ones, sixteen rows.
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
#include "kernels/zmm_lanes.h"

namespace k3::kernels {
namespace {

// vpdpbusd and vpdpwssd at both widths (the lane kernels' sixteen rows fill a zmm).
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
inline __m512i dpbusd(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }
inline __m256i dpwssd(__m256i acc, __m256i p, __m256i s) { return _mm256_dpwssd_epi32(acc, p, s); }
inline __m512i dpwssd(__m512i acc, __m512i p, __m512i s) { return _mm512_dpwssd_epi32(acc, p, s); }

struct VnniProducts {
    static constexpr bool kByteDots = true;
    static __m256i byte_dot(__m256i u, __m256i s) { return dpbusd(__m256i{}, u, s); }
    template <typename I>
    static I add_scaled(I acc, I pairs, I scales) { return dpwssd(acc, pairs, scales); }
    // The lane kernels (LaneTiles, sixteen rows: zmm): the byte products of each 16-value slot
    // in its own chain, then its int32 scale.
    static __m256i lane_scales(__m256i scales) { return scales; }
    template <int kLargestLevel, bool kScalesPer32>
    static __m512i lane_sums(__m512i acc, const __m512i (&q)[8], const __m512i (&a)[8], __m512i even, __m512i odd) {
        __m512i low = dpbusd(__m512i{}, q[0], a[0]);
        __m512i high = dpbusd(__m512i{}, q[4], a[4]);
        for (int k = 1; k < 4; ++k) {
            low = dpbusd(low, q[k], a[k]);
            high = dpbusd(high, q[k + 4], a[k + 4]);
        }
        if constexpr (16 * kLargestLevel * 128 <= INT16_MAX) {
            // Each slot's sum fits in int16: the two slots' sums side by side in a lane's halves,
            // and one vpdpwssd with the two scales applies both and accumulates (vpmulld, two
            // uops on one port and a latency of 10, was a quarter of the kernel).
            const __m512i words = pair_index();
            return dpwssd(acc, _mm512_permutex2var_epi16(low, words, high), _mm512_permutex2var_epi16(even, words, odd));
        } else if constexpr (kScalesPer32) {
            return _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_add_epi32(low, high), even));
        } else {
            return _mm512_add_epi32(acc, _mm512_add_epi32(_mm512_mullo_epi32(low, even), _mm512_mullo_epi32(high, odd)));
        }
    }
    // Word 2r of lane r from the first operand's lane r, word 2r + 1 from the second's: each
    // lane's low half of two registers.
    static __m512i pair_index() {
        alignas(64) static constexpr int16_t kIndex[32] = {0,  32, 2,  34, 4,  36, 6,  38, 8,  40, 10, 42, 12, 44, 14, 46,
                                                           16, 48, 18, 50, 20, 52, 22, 54, 24, 56, 26, 58, 28, 60, 30, 62};
        return _mm512_load_si512(kIndex);
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
                                                   []<typename F>() { return q8k_simd::lanes_kernel<F, VnniProducts, int_simd::ZmmLanes>(); });
}

}  // namespace k3::kernels
#pragma GCC pop_options
