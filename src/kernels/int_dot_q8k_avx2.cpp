// AVX2 × Q8_K kernels: maddubs for the byte products, madd to apply the slot scales to its pair
// sums. Only called when CPUID reports AVX2.
#include <immintrin.h>

#include <array>
#include <concepts>
#include <cstdint>

#include "kernels/int_dot_q8k.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/int_dot_q8k_simd.h"

namespace k3::kernels {
namespace {

// Decode's tiles of Q4_K and Q5_K (q45k_decode_tile), four rows × one token; the rows left over
// through tile(). (Q6_K's tile() measured level with a tile of this kind.)
template <typename Format>
void q45k_decode_rows(const uint8_t* weights, size_t weight_stride, int64_t n_rows, const uint8_t* act_row, int64_t n, float* y);

struct Avx2Products {
    static constexpr bool kByteDots = false;
    template <typename Format>
        requires std::same_as<Format, q8k_formats::Q4K> || std::same_as<Format, q8k_formats::Q5K>
    static void decode_rows(const uint8_t* weights, size_t weight_stride, int64_t n_rows, const uint8_t* act_row, int64_t n, float* y) {
        q45k_decode_rows<Format>(weights, weight_stride, n_rows, act_row, n, y);
    }
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

// An empty asm that takes and gives `sum` in a register: a row's chain of adds stays a chain
// there. GCC otherwise reassociated the chain into a tree and held its sixteen terms, spilled to
// the stack (a sixth of the tile's instructions).
inline void chain(__m256i& sum) { asm("" : "+x"(sum)); }

// Two rows' 12 scale bytes (128-bit lane p of the result: row p's bytes 4..19, scales first) as
// bytes: sub-block scales 0..7, then mins 0..7, in each lane (block_kquants.h, unpack_scale_min_k4).
inline __m256i q45k_scales_and_mins(__m256i bytes) {
    const __m256i low = _mm256_and_si256(bytes, _mm256_set1_epi8(0x3f));  // dwords 0, 1: scales 0..3, mins 0..3
    // Dwords 0, 1: (w2 & 0x0f…) | (w0 >> 2 & 0x30…) and (w2 >> 4 & 0x0f…) | (w1 >> 2 & 0x30…).
    const __m256i shifted = _mm256_srlv_epi32(_mm256_shuffle_epi32(bytes, _MM_SHUFFLE(1, 0, 2, 2)), _mm256_setr_epi32(0, 4, 2, 2, 0, 4, 2, 2));
    const __m256i fields = _mm256_and_si256(shifted, _mm256_setr_epi32(0x0f0f0f0f, 0x0f0f0f0f, 0x30303030, 0x30303030, 0x0f0f0f0f,
                                                                       0x0f0f0f0f, 0x30303030, 0x30303030));
    const __m256i high = _mm256_or_si256(fields, _mm256_shuffle_epi32(fields, _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_unpacklo_epi32(low, high);
}

// Byte pairs 2s, 2s + 1 in every word: vpshufb spreads word s of each 128-bit half to all of
// that half's words.
inline constexpr auto kWordPicks = [] {
    std::array<std::array<uint8_t, 32>, 8> picks{};
    for (int s = 0; s < 8; ++s)
        for (int i = 0; i < 32; ++i) picks[size_t(s)][size_t(i)] = uint8_t(2 * s + i % 2);
    return picks;
}();
inline __m256i spread_word(__m256i words, int s) {
    return _mm256_shuffle_epi8(words, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kWordPicks[size_t(s)].data())));
}

// Decode's tile of Q4_K and Q5_K at AVX2, four rows × one token: each 64-level piece of a row
// from its 32 bytes of qs straight into maddubs, the sub-block's scale spread by one vpshufb.
// tile() holds a decoded block (eight registers a row) and spilled at sixteen ymm; with this
// tile one thread's tg128 of the bench mock's Q4_K_M at this level rose by a median 25% (6
// interleaved rounds, Zen 5). The same integer sums and f32 steps as tile().
template <typename Format>
void q45k_decode_tile(const uint8_t* weights, size_t weight_stride, const ActBlockQ8_K* act, int64_t n, float* y) {
    using Block = typename Format::BlockType;
    constexpr int kRows = 4;
    constexpr bool kFifthBit = std::same_as<Format, q8k_formats::Q5K>;
    const __m256i nibble = _mm256_set1_epi8(15);
    const auto prefetch = q8k_simd::decode_prefetch<Block, kRows>(weights, weight_stride, n);
    __m128 acc = _mm_setzero_ps(), off = _mm_setzero_ps();
    for (int64_t b = 0; b < n / 256; ++b) {
        prefetch(b);
        const ActBlockQ8_K& a = act[b];
        // Each sub-block's activation sum (two bsums, |sum| <= 32·128) as words 8..15, against
        // the mins there in a row's scale words.
        const __m256i sub_sums = _mm256_madd_epi16(q8k_simd::load32(a.bsums), _mm256_set1_epi16(1));
        const __m256i packed_sums = _mm256_packs_epi32(sub_sums, sub_sums);
        const __m256i min_act = _mm256_inserti128_si256(
            _mm256_setzero_si256(), _mm_unpacklo_epi64(_mm256_castsi256_si128(packed_sums), _mm256_extracti128_si256(packed_sums, 1)), 1);

        const Block* w[kRows];
        for (int r = 0; r < kRows; ++r) w[r] = reinterpret_cast<const Block*>(weights + size_t(r) * weight_stride) + b;
        __m256i sums[kRows], mins[kRows];
        for (int pair = 0; pair < kRows / 2; ++pair) {
            const __m256i scale_bytes = q45k_scales_and_mins(
                _mm256_inserti128_si256(_mm256_castsi128_si256(q8k_simd::load16(w[2 * pair]->scales)), q8k_simd::load16(w[2 * pair + 1]->scales), 1));
            for (int half = 0; half < 2; ++half) {
                const int r = 2 * pair + half;
                // Words 0..7: the sub-blocks' scales, 8..15: their mins.
                const __m256i words = _mm256_cvtepu8_epi16(half ? _mm256_extracti128_si256(scale_bytes, 1) : _mm256_castsi256_si128(scale_bytes));
                mins[r] = _mm256_madd_epi16(words, min_act);
                const __m256i scales = _mm256_permute2x128_si256(words, words, 0x00);
                __m256i qh;
                if constexpr (kFifthBit) qh = q8k_simd::load32(w[r]->qh);
                __m256i sum = _mm256_setzero_si256();
                for (int c = 0; c < 4; ++c) {
                    // Low nibbles: sub-block 2c (elements 64c..), high nibbles: 2c + 1.
                    const __m256i v = q8k_simd::load32(w[r]->qs + 32 * c);
                    __m256i low = _mm256_and_si256(v, nibble), high = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
                    if constexpr (kFifthBit) {
                        // Bit k of qh[l] is bit 4 of element 32k + l (shifts of at most 4 keep other bytes' bits off bit 4).
                        const auto fifth_bit = [&](int k) {
                            return _mm256_and_si256(k <= 4 ? _mm256_slli_epi16(qh, 4 - k) : _mm256_srli_epi16(qh, k - 4), q8k_simd::mask8(0x10));
                        };
                        low = _mm256_or_si256(low, fifth_bit(2 * c));
                        high = _mm256_or_si256(high, fifth_bit(2 * c + 1));
                    }
                    const __m256i low_pairs = _mm256_maddubs_epi16(low, q8k_simd::load32(a.qs + 64 * c));
                    const __m256i high_pairs = _mm256_maddubs_epi16(high, q8k_simd::load32(a.qs + 64 * c + 32));
                    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(low_pairs, spread_word(scales, 2 * c)));
                    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(high_pairs, spread_word(scales, 2 * c + 1)));
                    chain(sum);
                }
                sums[r] = sum;
            }
        }
        uint16_t d_bits[kRows], dmin_bits[kRows];
        for (int r = 0; r < kRows; ++r) {
            d_bits[r] = Format::d_bits(*w[r]);
            dmin_bits[r] = Format::dmin_bits(*w[r]);
        }
        const __m128 da = _mm_set1_ps(a.d);
        acc = _mm_fmadd_ps(_mm_mul_ps(q8k_simd::weight_factors<Format>(d_bits), da), _mm_cvtepi32_ps(q8k_simd::sums_of_4(sums)), acc);
        off = _mm_fmadd_ps(_mm_mul_ps(q8k_simd::weight_factors<Format>(dmin_bits), da), _mm_cvtepi32_ps(q8k_simd::sums_of_4(mins)), off);
    }
    alignas(16) float out[4];
    _mm_store_ps(out, _mm_sub_ps(acc, off));
    for (int r = 0; r < kRows; ++r) y[r] = out[r];
}

template <typename Format>
void q45k_decode_rows(const uint8_t* weights, size_t weight_stride, int64_t n_rows, const uint8_t* act_row, int64_t n, float* y) {
    const auto* act = reinterpret_cast<const ActBlockQ8_K*>(act_row);
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4) q45k_decode_tile<Format>(weights + size_t(r) * weight_stride, weight_stride, act, n, y + r);
    for (; r < n_rows; ++r) q8k_simd::tile<Format, Avx2Products, 1, 1>(weights + size_t(r) * weight_stride, 0, act_row, 0, n, y + r, 0);
}

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
