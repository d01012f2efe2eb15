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

#include <array>
#include <concepts>
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

// Decode's tiles of Q4_K, Q5_K (q45k_decode_tile) and Q6_K (q6k_decode_tile) at 512 bits, four
// rows × one token; the rows left over through tile().
template <typename Format>
void zmm_decode_rows(const uint8_t* weights, size_t weight_stride, int64_t n_rows, const uint8_t* act_row, int64_t n, float* y);

struct VnniProducts {
    static constexpr bool kByteDots = true;
    template <typename Format>
        requires std::same_as<Format, q8k_formats::Q4K> || std::same_as<Format, q8k_formats::Q5K> || std::same_as<Format, q8k_formats::Q6K>
    static void decode_rows(const uint8_t* weights, size_t weight_stride, int64_t n_rows, const uint8_t* act_row, int64_t n, float* y) {
        zmm_decode_rows<Format>(weights, weight_stride, n_rows, act_row, n, y);
    }
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

// The four rows' 12 scale bytes (lane r of the result: row r's bytes 4..19, scales first) as
// bytes: slot scales 0..7, then mins 0..7, in each lane (block_kquants.h, unpack_scale_min_k4).
inline __m512i q45k_scales_and_mins(__m512i bytes) {
    const __m512i low = _mm512_and_si512(bytes, _mm512_set1_epi8(0x3f));  // dwords 0, 1: scales 0..3, mins 0..3
    // Dwords 0, 1: (w2 & 0x0f…) | (w0 >> 2 & 0x30…) and (w2 >> 4 & 0x0f…) | (w1 >> 2 & 0x30…).
    const __m512i shifted = _mm512_srlv_epi32(_mm512_shuffle_epi32(bytes, _MM_PERM_BACC), _mm512_set4_epi32(2, 2, 4, 0));
    const __m512i fields = _mm512_and_si512(shifted, _mm512_set4_epi32(0x30303030, 0x30303030, 0x0f0f0f0f, 0x0f0f0f0f));
    const __m512i high = _mm512_or_si512(fields, _mm512_shuffle_epi32(fields, _MM_PERM_DCDC));
    return _mm512_unpacklo_epi32(low, high);
}

// Lane r: the sum of the dwords of s[r] (r < 4).
inline __m128i zmm_sums_of_4(const __m512i* s) {
    const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[0], s[1]), _mm512_unpackhi_epi32(s[0], s[1]));
    const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2], s[3]), _mm512_unpackhi_epi32(s[2], s[3]));
    const __m512i lanes = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
    const __m256i halves = _mm256_add_epi32(_mm512_castsi512_si256(lanes), _mm512_extracti64x4_epi64(lanes, 1));
    return _mm_add_epi32(_mm256_castsi256_si128(halves), _mm256_extracti128_si256(halves, 1));
}

// Which scale word each word of a pack of two byte-dot results takes (index 2·half + j): 128-bit
// lane L of the pack of slots (4j, 4j + 2) and (4j + 1, 4j + 3) holds four sums of slot
// 4j + 2·(L / 2), then four of the slot after it; a row's scale words start at 16·half.
inline constexpr auto kQ45kSlotWords = [] {
    std::array<std::array<int16_t, 32>, 4> index{};
    for (int half = 0; half < 2; ++half)
        for (int j = 0; j < 2; ++j)
            for (int w = 0; w < 32; ++w) index[size_t(2 * half + j)][size_t(w)] = int16_t(16 * half + 4 * j + 2 * (w / 16) + (w / 4) % 2);
    return index;
}();

// Decode's tile of Q4_K and Q5_K at 512 bits, four rows × one token: a block's 256 levels in four
// zmm of 64 (two 32-value slots each, as one 64-byte load of qs splits into low and high nibbles),
// each row's slot scales from one vector unpack of the four rows' scale bytes. A quarter of the
// 256-bit tile's instructions per block; the same integer sums and f32 steps as tile().
template <typename Format>
void q45k_decode_tile(const uint8_t* weights, size_t weight_stride, const ActBlockQ8_K* act, int64_t n, float* y) {
    using Block = typename Format::BlockType;
    constexpr int kRows = 4;
    constexpr bool kFifthBit = std::same_as<Format, q8k_formats::Q5K>;
    const __m512i nibble = _mm512_set1_epi8(15);
    __m512i slots[2][2];
    for (int half = 0; half < 2; ++half)
        for (int j = 0; j < 2; ++j) slots[half][j] = _mm512_loadu_si512(kQ45kSlotWords[2 * half + j].data());
    const auto prefetch = q8k_simd::decode_prefetch<Block, kRows>(weights, weight_stride, n);
    __m128 acc = _mm_setzero_ps(), off = _mm_setzero_ps();
    for (int64_t b = 0; b < n / 256; ++b) {
        prefetch(b);
        const ActBlockQ8_K& a = act[b];
        // Activations in the levels' order: elements 128j.. and 128j + 64.. against the low
        // nibbles of qs[64j ..], 128j + 32.. and 128j + 96.. against the high ones.
        __m512i a_low[2], a_high[2];
        for (int j = 0; j < 2; ++j) {
            const int8_t* q = a.qs + 128 * j;
            a_low[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q8k_simd::load32(q)), q8k_simd::load32(q + 64), 1);
            a_high[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q8k_simd::load32(q + 32)), q8k_simd::load32(q + 96), 1);
        }
        // Each slot's activation sum (two bsums, |sum| ≤ 32·128) as words 8..15 of each 256-bit
        // half, against the mins there in the rows' scale words.
        const __m256i slot_sums = _mm256_madd_epi16(q8k_simd::load32(a.bsums), _mm256_set1_epi16(1));
        const __m512i min_act = _mm512_broadcast_i64x4(_mm256_inserti128_si256(_mm256_setzero_si256(), _mm256_cvtepi32_epi16(slot_sums), 1));

        const Block* w[kRows];
        for (int r = 0; r < kRows; ++r) w[r] = reinterpret_cast<const Block*>(weights + size_t(r) * weight_stride) + b;
        // The lane index must be an immediate at every -O, so no loop.
        static_assert(kRows == 4);
        const __m512i bytes = _mm512_inserti32x4(
            _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(q8k_simd::load16(w[0]->scales)),
                                                  q8k_simd::load16(w[1]->scales), 1),
                               q8k_simd::load16(w[2]->scales), 2),
            q8k_simd::load16(w[3]->scales), 3);
        const __m512i scale_bytes = q45k_scales_and_mins(bytes);
        // Words 0..15 of row 2p, 16..31 of row 2p + 1: scales 0..7, mins 0..7.
        const __m512i words[2] = {_mm512_cvtepu8_epi16(_mm512_castsi512_si256(scale_bytes)),
                                  _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(scale_bytes, 1))};
        const __m512i min_sums[2] = {_mm512_madd_epi16(words[0], min_act), _mm512_madd_epi16(words[1], min_act)};

        __m512i sums[kRows];
        for (int r = 0; r < kRows; ++r) {
            __m512i qh;
            if constexpr (kFifthBit) qh = _mm512_broadcast_i64x4(q8k_simd::load32(w[r]->qh));
            __m512i sum = _mm512_setzero_si512();
            for (int j = 0; j < 2; ++j) {
                const __m512i v = _mm512_loadu_si512(w[r]->qs + 64 * j);
                __m512i low = _mm512_and_si512(v, nibble), high = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
                if constexpr (kFifthBit) {
                    // Bit k of qh[l] is bit 4 of element 32k + l: slots 4j, 4j + 2 (low), 4j + 1, 4j + 3 (high).
                    const auto bit_of_slots = [&](int k) {
                        return _mm512_test_epi8_mask(qh, _mm512_inserti64x4(_mm512_set1_epi8(char(1 << k)), _mm256_set1_epi8(char(1 << (k + 2))), 1));
                    };
                    const __m512i sixteen = _mm512_set1_epi8(16);
                    low = _mm512_mask_add_epi8(low, bit_of_slots(4 * j), low, sixteen);
                    high = _mm512_mask_add_epi8(high, bit_of_slots(4 * j + 1), high, sixteen);
                }
                const __m512i packed = _mm512_packs_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), low, a_low[j]),
                                                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), high, a_high[j]));
                sum = _mm512_dpwssd_epi32(sum, packed, _mm512_permutexvar_epi16(slots[r % 2][j], words[r / 2]));
            }
            sums[r] = sum;
        }
        const __m128i block_sums = zmm_sums_of_4(sums);
        // Lane r: row r's four min products (dwords 4..7 of its 256-bit half), then their sum.
        const __m512i row_mins = _mm512_shuffle_i32x4(min_sums[0], min_sums[1], _MM_SHUFFLE(3, 1, 3, 1));
        const __m512i pairs = _mm512_add_epi32(row_mins, _mm512_shuffle_epi32(row_mins, _MM_PERM_BADC));
        const __m512i totals = _mm512_add_epi32(pairs, _mm512_shuffle_epi32(pairs, _MM_PERM_CDAB));
        const __m128i mins = _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), totals));
        uint16_t d_bits[kRows], dmin_bits[kRows];
        for (int r = 0; r < kRows; ++r) {
            d_bits[r] = Format::d_bits(*w[r]);
            dmin_bits[r] = Format::dmin_bits(*w[r]);
        }
        const __m128 da = _mm_set1_ps(a.d);
        acc = _mm_fmadd_ps(_mm_mul_ps(q8k_simd::weight_factors<Format>(d_bits), da), _mm_cvtepi32_ps(block_sums), acc);
        off = _mm_fmadd_ps(_mm_mul_ps(q8k_simd::weight_factors<Format>(dmin_bits), da), _mm_cvtepi32_ps(mins), off);
    }
    alignas(16) float out[4];
    _mm_store_ps(out, _mm_sub_ps(acc, off));
    for (int r = 0; r < kRows; ++r) y[r] = out[r];
}

// Which scale word each word of a pack of two Q6_K slot-sum registers takes (index h): 128-bit
// lane L holds four sums of slot 8h + L, then four of slot 8h + 4 + L.
inline constexpr auto kQ6kSlotWords = [] {
    std::array<std::array<int16_t, 32>, 2> index{};
    for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 32; ++w) index[size_t(h)][size_t(w)] = int16_t(8 * h + w / 8 + 4 * (w % 8 / 4));
    return index;
}();

// Decode's tile of Q6_K at 512 bits, four rows × one token: each half of a block's 256 levels in
// two zmm of 64 (one 64-byte load of ql split into low and high nibbles, the two high bits of
// each from one broadcast of qh shifted per 256-bit half), the levels + 32 as unsigned bytes
// against the activations in element order; the slots' int8 scales by vpdpwssd and the bias
// 32·Σ scale·bsum taken off once per row and block. The same integer sums and f32 steps as tile().
template <typename Format>
void q6k_decode_tile(const uint8_t* weights, size_t weight_stride, const ActBlockQ8_K* act, int64_t n, float* y) {
    using Block = tensor::BlockQ6_K;
    constexpr int kRows = 4;
    const __m512i nibble = _mm512_set1_epi8(15), bits45 = _mm512_set1_epi8(0x30);
    // Per 256-bit half of a 64-level register: qh's bits to bits 4..5 (low nibbles: slots g = 0, 1
    // shift left 4 and 2; high nibbles: g = 2, 3 shift right 0 and 2).
    const __m512i low_shift = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i high_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i slot_words[2] = {_mm512_loadu_si512(kQ6kSlotWords[0].data()), _mm512_loadu_si512(kQ6kSlotWords[1].data())};
    const auto prefetch = q8k_simd::decode_prefetch<Block, kRows>(weights, weight_stride, n);
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / 256; ++b) {
        prefetch(b);
        const ActBlockQ8_K& a = act[b];
        __m512i a_qs[4];
        for (int j = 0; j < 4; ++j) a_qs[j] = _mm512_loadu_si512(a.qs + 64 * j);
        const __m256i bsums = q8k_simd::load32(a.bsums);
        __m512i sums[kRows];
        uint16_t d_bits[kRows];
        for (int r = 0; r < kRows; ++r) {
            const Block& w = reinterpret_cast<const Block*>(weights + size_t(r) * weight_stride)[b];
            const __m256i scales = _mm256_cvtepi8_epi16(q8k_simd::load16(w.scales));
            const __m512i scale_words = _mm512_castsi256_si512(scales);
            // The bias: 32·Σ_j scale_j·bsum_j, as eight int32 terms.
            __m512i sum = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(scales, bsums), 5)));
            for (int h = 0; h < 2; ++h) {
                const __m512i ql = _mm512_loadu_si512(w.ql + 64 * h);
                const __m512i qh = _mm512_broadcast_i64x4(q8k_simd::load32(w.qh + 32 * h));
                const __m512i low = _mm512_or_si512(_mm512_and_si512(ql, nibble), _mm512_and_si512(_mm512_sllv_epi16(qh, low_shift), bits45));
                const __m512i high = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nibble),
                                                     _mm512_and_si512(_mm512_srlv_epi16(qh, high_shift), bits45));
                // Four products of |level| <= 63 and |a| <= 127 per dword fit int16.
                const __m512i packed = _mm512_packs_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), low, a_qs[2 * h]),
                                                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), high, a_qs[2 * h + 1]));
                sum = _mm512_dpwssd_epi32(sum, packed, _mm512_permutexvar_epi16(slot_words[h], scale_words));
            }
            sums[r] = sum;
            d_bits[r] = Format::d_bits(w);
        }
        acc = _mm_fmadd_ps(_mm_mul_ps(q8k_simd::weight_factors<Format>(d_bits), _mm_set1_ps(a.d)), _mm_cvtepi32_ps(zmm_sums_of_4(sums)), acc);
    }
    alignas(16) float out[4];
    _mm_store_ps(out, acc);
    for (int r = 0; r < kRows; ++r) y[r] = out[r];
}

template <typename Format>
void zmm_decode_rows(const uint8_t* weights, size_t weight_stride, int64_t n_rows, const uint8_t* act_row, int64_t n, float* y) {
    const auto* act = reinterpret_cast<const ActBlockQ8_K*>(act_row);
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4) {
        if constexpr (std::same_as<Format, q8k_formats::Q6K>) q6k_decode_tile<Format>(weights + size_t(r) * weight_stride, weight_stride, act, n, y + r);
        else q45k_decode_tile<Format>(weights + size_t(r) * weight_stride, weight_stride, act, n, y + r);
    }
    for (; r < n_rows; ++r)
        q8k_simd::tile<Format, VnniProducts, 1, 1>(weights + size_t(r) * weight_stride, 0, act_row, 0, n, y + r, 0);
}

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
