// AVX2 integer kernels: each block's product by maddubs (|w| as unsigned times a with w's sign,
// or the levels biased to unsigned where their pair sums fit int16: int_dot_simd.h's
// DecodeLevels and LanesBlock) and madd. Only called when CPUID reports AVX2.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/int_dot.h"
#include "kernels/int_dot_formats.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/int_dot_simd.h"

namespace k3::kernels {
namespace {

struct Avx2Level {
    struct Weight {
        __m256i w, magnitude;
    };
    static Weight weight(__m256i levels) { return {levels, _mm256_sign_epi8(levels, levels)}; }
    // |w| <= 128 and |a| <= 127, so the int16 pair sums of maddubs cannot saturate.
    static constexpr bool kPairSums = true;
    static __m256i widen(__m256i pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }
    static __m256i product(const Weight& w, __m256i a) { return widen(_mm256_maddubs_epi16(w.magnitude, _mm256_sign_epi8(a, w.w))); }
    static __m256i unsigned_product(__m256i u, __m256i a) { return widen(_mm256_maddubs_epi16(u, a)); }
    static __m256i add_unsigned_product(__m256i acc, __m256i u, __m256i a) { return _mm256_add_epi32(acc, unsigned_product(u, a)); }
};

}  // namespace

const IntDotKernels& avx2_int_dot_kernels() {
    using namespace int_formats;
    using int_simd::int_dot;
    static const IntDotKernels k{int_dot<Q8_0, Avx2Level>,  int_dot<Mxfp4, Avx2Level>, int_dot<Q4_0, Avx2Level>,
                                 int_dot<Q5_0, Avx2Level>,  int_dot<Iq4Nl, Avx2Level>, int_dot<Q4_1, Avx2Level>,
                                 int_dot<Q5_1, Avx2Level>};
    return k;
}

const IntDotTileKernels& avx2_int_dot_tile_kernels() {
    using namespace int_formats;
    using int_simd::int_dot_lanes;
    using int_simd::int_dot_tile;
    static const IntDotTileKernels k{int_dot_tile<Q8_0, Avx2Level>,  int_dot_tile<Mxfp4, Avx2Level>,
                                     int_dot_tile<Q4_0, Avx2Level>,  int_dot_tile<Q5_0, Avx2Level>,
                                     int_dot_tile<Iq4Nl, Avx2Level>, int_dot_tile<Q4_1, Avx2Level>,
                                     int_dot_tile<Q5_1, Avx2Level>,
                                     int_dot_lanes<Q8_0, Avx2Level>,  int_dot_lanes<Mxfp4, Avx2Level>,
                                     int_dot_lanes<Q4_0, Avx2Level>,  int_dot_lanes<Q5_0, Avx2Level>,
                                     int_dot_lanes<Iq4Nl, Avx2Level>, int_dot_lanes<Q4_1, Avx2Level>,
                                     int_dot_lanes<Q5_1, Avx2Level>};
    return k;
}

// Each group's eight blocks (a Q8_K block's eight 32-value runs) loaded as they lie and
// transposed into the lanes (transpose_lanes); the 32-value blocks' sums from one maddubs and
// madd per quad register.
void pack_act_lanes_avx2(ActivationFormat format, const void* act_row, int64_t n, ActLaneGroup* out) {
    const auto* bytes = static_cast<const uint8_t*>(act_row);
    const bool q8_K = format == ActivationFormat::q8_K;
    const size_t block_bytes = activation_block_bytes(format);
    const int64_t n_blocks = n / 32;
    for (int64_t g = 0; g < act_lane_groups(n); ++g) {
        const uint8_t* first = q8_K ? bytes + size_t(g) * block_bytes : bytes + size_t(g * 8) * block_bytes;
        const auto* k_block = reinterpret_cast<const ActBlockQ8_K*>(first);
        const int count = int(std::min<int64_t>(8, n_blocks - g * 8));
        __m256i v[8];
        for (int j = 0; j < 8; ++j) {
            const uint8_t* qs = q8_K ? reinterpret_cast<const uint8_t*>(k_block->qs) + 32 * j : first + size_t(j) * block_bytes + block_bytes - 32;
            v[j] = j < count ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)) : _mm256_setzero_si256();
        }
        int_simd::transpose_lanes(v);
        ActLaneGroup& group = out[g];
        for (int k = 0; k < 8; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(group.qs + 32 * k), v[k]);
        __m256i sums = _mm256_setzero_si256();
        if (q8_K) {
            _mm256_storeu_ps(group.d, _mm256_set1_ps(k_block->d));
            std::memcpy(group.bsums, k_block->bsums, sizeof group.bsums);
            const __m128i slot_sums = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k_block->bsums));
            const __m128i high_slots = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k_block->bsums + 8));
            // |a sub-block's sum| <= 32 · 127: the int32 pair sums pack back to int16 unchanged.
            const __m128i pair_sums = _mm_packs_epi32(_mm_madd_epi16(slot_sums, _mm_set1_epi16(1)), _mm_madd_epi16(high_slots, _mm_set1_epi16(1)));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(group.sub_sums), pair_sums);
        } else {
            for (int k = 0; k < 8; ++k)
                sums = _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v[k]), _mm256_set1_epi16(1)));
            _mm256_storeu_ps(group.d, int_simd::f16_lanes(first, block_bytes, count));
            std::memset(group.bsums, 0, sizeof group.bsums);
            std::memset(group.sub_sums, 0, sizeof group.sub_sums);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(group.sums), sums);
        const bool offsets = format == ActivationFormat::q8_1;
        _mm256_storeu_ps(group.s, offsets ? int_simd::f16_lanes(first + 2, block_bytes, count) : _mm256_setzero_ps());
    }
}

}  // namespace k3::kernels
#pragma GCC pop_options
