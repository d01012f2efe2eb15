// The SIMD integer kernels of int_dot.h, written once: per block the weights' int8 levels in one
// 256-bit register (AVX2 shuffles, shared by both levels), a level's integer block product, then
// the float combination int_dot.h defines on eight block sums at a time. Include only inside a
// target region that enables at least avx2,fma,f16c (see int_dot_avx2.cpp), after every system
// header; the functions live in an unnamed namespace so each including file has its own copies.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/int_dot_formats.h"
#include "kernels/isa.h"
#include "kernels/simd_avx2.h"

namespace k3::kernels::int_simd {
namespace {

// The 32 nibbles of qs[16] in element order: low nibbles, then high nibbles (the 16 bytes in both
// halves, the upper half shifted right by 4, one mask: three instructions).
inline __m256i nibbles(const uint8_t* qs) {
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(15));
}

// 0x10 in byte j where bit j of the little-endian u32 at p is set (the Q5 fifth bits).
inline __m256i fifth_bits(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(qh)), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                                     3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
}

inline __m256i table_lookup(const int8_t* table, __m256i codes) {
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
    return _mm256_shuffle_epi8(t, codes);
}

// A block's 32 levels, as int_formats::F::levels writes them.
template <typename F>
inline __m256i levels(const uint8_t* b) {
    using namespace int_formats;
    if constexpr (std::is_same_v<F, Q8_0>) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + F::kQsAt));
    if constexpr (std::is_same_v<F, Mxfp4>) return table_lookup(tensor::kMxfp4Values, nibbles(b + F::kQsAt));
    if constexpr (std::is_same_v<F, Iq4Nl>) return table_lookup(tensor::kIq4nlValues, nibbles(b + F::kQsAt));
    if constexpr (std::is_same_v<F, Q4_0>) return _mm256_sub_epi8(nibbles(b + F::kQsAt), _mm256_set1_epi8(8));
    if constexpr (std::is_same_v<F, Q4_1>) return nibbles(b + F::kQsAt);
    if constexpr (std::is_same_v<F, Q5_0>)
        return _mm256_sub_epi8(_mm256_or_si256(nibbles(b + F::kQsAt), fifth_bits(b + F::kQhAt)), _mm256_set1_epi8(16));
    if constexpr (std::is_same_v<F, Q5_1>) return _mm256_or_si256(nibbles(b + F::kQsAt), fifth_bits(b + F::kQhAt));
}

// A table of 16 levels plus kBias, as the unsigned bytes they become.
template <int kBias>
constexpr std::array<int8_t, 16> biased_table(const int8_t (&values)[16]) {
    std::array<int8_t, 16> table{};
    for (int i = 0; i < 16; ++i) table[size_t(i)] = int8_t(uint8_t(values[i] + kBias));
    return table;
}
template <int kBias>
inline constexpr std::array<int8_t, 16> kBiasedMxfp4 = biased_table<kBias>(tensor::kMxfp4Values);
template <int kBias>
inline constexpr std::array<int8_t, 16> kBiasedIq4nl = biased_table<kBias>(tensor::kIq4nlValues);

// The formats whose 4-bit codes index a table of levels, and that table plus kBias.
template <typename F>
inline constexpr bool kTableCodes = std::is_same_v<F, int_formats::Mxfp4> || std::is_same_v<F, int_formats::Iq4Nl>;
template <typename F, int kBias>
constexpr const int8_t* biased_code_table() {
    static_assert(kTableCodes<F>);
    if constexpr (std::is_same_v<F, int_formats::Mxfp4>) return kBiasedMxfp4<kBias>.data();
    else return kBiasedIq4nl<kBias>.data();
}

// Whether a format's levels plus kBias follow from its 4-bit codes alone: Q4_0's codes (bias 8),
// Q4_1's (bias 0), the table formats' tables shifted.
template <typename F, int kBias>
inline constexpr bool kNibbleCodes = (std::is_same_v<F, int_formats::Q4_0> && kBias == 8) ||
                                     (std::is_same_v<F, int_formats::Q4_1> && kBias == 0) ||
                                     kTableCodes<F>;

// Codes (one per byte) as levels plus kBias (kNibbleCodes).
template <typename F, int kBias>
[[gnu::always_inline]] inline __m256i biased_codes(__m256i codes) {
    if constexpr (kTableCodes<F>) return table_lookup(biased_code_table<F, kBias>(), codes);
    else return codes;
}

// A block's 32 levels plus kBias as unsigned bytes (kBias + the largest level <= 255): Q4_0's and
// Q5_0's stored codes where the bias is their offset, the table formats' tables shifted.
template <typename F, int kBias>
[[gnu::always_inline]] inline __m256i biased_levels(const uint8_t* b) {
    using namespace int_formats;
    if constexpr (kNibbleCodes<F, kBias>) return biased_codes<F, kBias>(nibbles(b + F::kQsAt));
    else if constexpr (std::is_same_v<F, Q5_0> && kBias == 16) return _mm256_or_si256(nibbles(b + F::kQsAt), fifth_bits(b + F::kQhAt));
    else if constexpr (kBias == 0) return levels<F>(b);
    else return _mm256_add_epi8(levels<F>(b), _mm256_set1_epi8(char(kBias)));
}

// Decode's form of a format's levels (TileBlock, one token): the levels plus kBias as unsigned
// bytes where kUnsigned, so that a block's product is one unsigned product (no sign step) and
// the bias times the token's block sums comes off once per group for all of the tile's rows.
// The bias is the largest magnitude (Q4_0's and Q5_0's stored codes; none for the offset
// formats, whose levels are unsigned already); maddubs' pair sums of bias + level <= 2·kMaxLevel
// times 127 must stay under 2^15, which leaves Q8_0 and IQ4_NL the sign step at AVX2.
template <typename F, typename Level>
struct DecodeLevels {
    static constexpr int kBias = F::kOffset ? 0 : F::kMaxLevel;
    static constexpr bool kUnsigned = !Level::kPairSums || 2 * (kBias + F::kMaxLevel) * 127 <= INT16_MAX;
};

// Two blocks' 16-byte code arrays: low nibbles (elements 0..15 of each block, the first block's in
// the low half), high nibbles (elements 16..31).
[[gnu::always_inline]] inline void nibble_pair(const uint8_t* first, const uint8_t* second, __m256i& low, __m256i& high) {
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(first))),
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(second)), 1);
    low = _mm256_and_si256(q, _mm256_set1_epi8(15));
    high = _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(15));
}

// Lane i (i < 4) of each 128-bit half: the sum of p_i's four lanes in that half, by unpacks and
// adds (vphaddd does it in three instructions, but issues one per two cycles on Zen 5).
[[gnu::always_inline]] inline __m256i sum_quads(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p0, p1), _mm256_unpackhi_epi32(p0, p1));  // p0 02, p1 02, p0 13, p1 13
    const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p2, p3), _mm256_unpackhi_epi32(p2, p3));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// Eight registers of 8 int32 partial sums -> one register with the total of register j in lane j.
// (With sum_quads instead of the vphaddd, Q8_0's decode at AVX2 measured 10% slower on Zen 5.)
inline __m256i block_totals(const __m256i* p) {
    const __m256i q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q0, q1, 0x31));
}

inline float reduce8(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// The scales below are built in registers: eight small stores read back as one load stall store
// forwarding (measured: that stall was half of MXFP4 decode's time).

// Fields first..first + 3 of field(j) (16 bits each) as one 64-bit word, packed by scalar
// shifts on the integer ports and moved to a vector register once: inserted one by one (vpinsrw,
// two uops each on Zen 3) they took the vector ports that bound the decode tiles. The empty asm
// holds each field in a general register, where GCC would vectorise the packing again.
template <typename Field>
[[gnu::always_inline]] inline uint64_t pack_four_u16(Field field, int first) {
    uint64_t word = 0;
    for (int j = 3; j >= 0; --j) {
        uint64_t v = field(first + j);
        asm("" : "+r"(v));
        word = word << 16 | v;
    }
    return word;
}

// `count` (<= 8) f16 fields, `stride` bytes apart, as f32 lanes (zeros after count).
[[gnu::always_inline]] inline __m256 f16_lanes(const uint8_t* first, size_t stride, int count) {
    const auto field = [&](int j) -> uint16_t { return j < count ? int_formats::load_u16(first + size_t(j) * stride) : 0; };
    return _mm256_cvtph_ps(_mm_set_epi64x(int64_t(pack_four_u16(field, 4)), int64_t(pack_four_u16(field, 0))));
}

// E8M0 exponents (one per int32 lane) as mxfp4_half_scale's 2^(e - 128), subnormal below e = 2.
[[gnu::always_inline]] inline __m256 e8m0_half_scales(__m256i e) {
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}

// The blocks' scales as f32 lanes (zeros after count); E8M0 as mxfp4_half_scale builds it.
template <typename F>
[[gnu::always_inline]] inline __m256 weight_scales(const uint8_t* w, int count) {
    if constexpr (F::kScaleE8M0) {
        const auto e = [&](int j) -> int { return j < count ? w[j * F::kBytes] : 0; };
        const __m256 scales = e8m0_half_scales(_mm256_setr_epi32(e(0), e(1), e(2), e(3), e(4), e(5), e(6), e(7)));
        const __m256i present = _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        return _mm256_and_ps(scales, _mm256_castsi256_ps(present));
    } else {
        return f16_lanes(w, F::kBytes, count);
    }
}

// A full group's eight scales, as weight_scales<F>(wb, 8). The E8M0 bytes are packed in a general
// register by scalar loads and shifts and moved over once: gathering them with vector shuffles
// competes with the decode's for the vector ports that bound AVX2's MXFP4 decode.
template <typename F>
[[gnu::always_inline]] inline __m256 group_scales(const uint8_t* wb) {
    if constexpr (F::kScaleE8M0) {
        constexpr uint64_t kOnes = 0x0101010101010101, kHighs = 0x8080808080808080;
        uint64_t e = 0;  // block k's exponent in byte k
        for (int k = 7; k >= 0; --k) e = e << 8 | wb[k * F::kBytes];
        const uint64_t halves = e & ~kOnes;  // a zero byte where e < 2
        if ((halves - kOnes) & ~halves & kHighs) [[unlikely]]
            return e8m0_half_scales(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(e))));
        // Every e >= 2: 2^(e - 128) is normal, its bits (e - 1) << 23, and e - 1 borrows across no byte.
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(e - kOnes))), 23));
    } else {
        return weight_scales<F>(wb, 8);
    }
}

// Decode's group of eight blocks of a format with 4-bit codes (kNibbleCodes<F, kBias>), two
// blocks per register, k and k + 4 (so that the horizontal sums leave block j in lane j): each
// pair's low nibbles in one register against the first halves of their activations, the high
// nibbles against the second (half the decode and the horizontal sums of block by block); with
// maddubs' pair sums both products add in int16 before one widening. acts(qs) arranges a token's
// eight activation blocks once for every row; token_totals<kTokens>(wb, acts, totals) gives each
// of kTokens tokens the eight blocks' integer sums of biased levels in block order, each block's
// levels decoded once for all of them; scales(wb) their weight scales (weight_scales'). A Level
// may supply decoders of its own for any format (DecodeGroupsOf below).
template <typename F, int kBias, typename Level>
struct YmmNibbleGroups {
    struct Acts {
        __m256i low[4], high[4];
    };
    [[gnu::always_inline]] static Acts acts(const __m256i (&qs)[8]) {
        Acts a;
        for (int k = 0; k < 4; ++k) {
            a.low[k] = _mm256_permute2x128_si256(qs[k], qs[k + 4], 0x20);
            a.high[k] = _mm256_permute2x128_si256(qs[k], qs[k + 4], 0x31);
        }
        return a;
    }
    template <int kTokens>
    [[gnu::always_inline]] static void token_totals(const uint8_t* wb, const Acts* const (&a)[kTokens], __m256i (&totals)[kTokens]) {
        __m256i pairs[kTokens][4];
        for (int k = 0; k < 4; ++k) {
            __m256i low, high;
            nibble_pair(wb + k * F::kBytes + F::kQsAt, wb + (k + 4) * F::kBytes + F::kQsAt, low, high);
            low = biased_codes<F, kBias>(low);
            high = biased_codes<F, kBias>(high);
            for (int t = 0; t < kTokens; ++t) {
                if constexpr (Level::kPairSums) {
                    static_assert(2 * 2 * (kBias + F::kMaxLevel) * 127 <= INT16_MAX);
                    pairs[t][k] = Level::widen(_mm256_add_epi16(_mm256_maddubs_epi16(low, a[t]->low[k]), _mm256_maddubs_epi16(high, a[t]->high[k])));
                } else {
                    pairs[t][k] = Level::add_unsigned_product(Level::unsigned_product(low, a[t]->low[k]), high, a[t]->high[k]);
                }
            }
        }
        // Block k's total in lane k, k + 4's in lane k + 4.
        for (int t = 0; t < kTokens; ++t) totals[t] = sum_quads(pairs[t][0], pairs[t][1], pairs[t][2], pairs[t][3]);
    }
    [[gnu::always_inline]] static __m256 scales(const uint8_t* wb) { return group_scales<F>(wb); }
};

// The group decoder of decode's tiles for F at Level (YmmNibbleGroups' contract):
// Level::DecodeGroups<F, kBias> where the Level has one (void there: none for F), else
// YmmNibbleGroups for the 4-bit code formats, else void (the tiles go block by block).
template <typename Level, typename F, int kBias>
struct DecodeGroupsOf {
    using type = std::conditional_t<kNibbleCodes<F, kBias>, YmmNibbleGroups<F, kBias, Level>, void>;
};
template <typename Level, typename F, int kBias>
    requires requires { typename Level::template DecodeGroups<F, kBias>; }
struct DecodeGroupsOf<Level, F, kBias> {
    using type = typename Level::template DecodeGroups<F, kBias>;
};

// The 8x8 transpose of 32-bit lanes: lane j of v[k] becomes lane k of v[j].
[[gnu::always_inline]] inline void transpose_lanes(__m256i* v) {
    __m256i t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
        v[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
    }
}

// The registers of the kernels with the rows in the lanes (RowLanes below, int_dot_q8k_simd.h's
// LaneTiles): kWidth weight rows in the lanes of one register, decoded in panels of eight (the
// ymm halves of an AVX-512 register). The f32 side is simd_avx2.h's vector (zmm_lanes.h's on
// simd_avx512.h's for sixteen rows at AVX-512); besides it:
//   I, the int32 register; iload(const __m256i*): kWidth / 8 adjacent ymm as one register;
//   izero, ibroadcast(int32), iadd, isub, ishift_left<s>, to_float; store_rows(y, v, rows): the
//   lanes below rows to y; and for RowLanes dot_unsigned(acc, u, s): acc + the four products of
//   unsigned u and signed s bytes in each lane.
struct YmmLanes : simd::Avx2 {
    using I = __m256i;
    static I izero() { return _mm256_setzero_si256(); }
    static I iload(const __m256i* p) { return *p; }
    static I ibroadcast(int32_t v) { return _mm256_set1_epi32(v); }
    static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
    static I isub(I a, I b) { return _mm256_sub_epi32(a, b); }
    template <int kShift>
    static I ishift_left(I a) { return _mm256_slli_epi32(a, kShift); }
    static F to_float(I a) { return _mm256_cvtepi32_ps(a); }
    // (A copy of the lanes compiled to a memcpy call per token, 2% of Q4_K_M prefill.)
    static void store_rows(float* y, F v, int rows) { rows == kWidth ? store(y, v) : store(y, v, tail(rows)); }
};

// Group b's weights for kRows rows (w_stride bytes apart): their levels as Level::Weight, in
// block order or, where kLanes, transposed to the lane layout (int_dot.h, ActLaneGroup); their
// scales, and their offsets (zero for formats without).
template <typename F, typename Level, int kRows, bool kLanes>
[[gnu::always_inline]] inline void group_weights(const uint8_t* w, size_t w_stride, int64_t b, int count,
                                                 typename Level::Weight (&wl)[kRows][8], __m256 (&w_d)[kRows],
                                                 __m256 (&w_m)[kRows]) {
    for (int r = 0; r < kRows; ++r) {
        const uint8_t* wb = w + size_t(r) * w_stride + b * F::kBytes;
        __m256i lv[8];
        for (int j = 0; j < 8; ++j) lv[j] = j < count ? levels<F>(wb + j * F::kBytes) : _mm256_setzero_si256();
        if constexpr (kLanes) transpose_lanes(lv);
        for (int k = 0; k < 8; ++k) wl[r][k] = Level::weight(lv[k]);
        w_d[r] = weight_scales<F>(wb, count);
        w_m[r] = F::kOffset ? f16_lanes(wb + 2, F::kBytes, count) : _mm256_setzero_ps();
    }
}

// The frame of the tile kernels: f32 accumulators per (row, token), the groups of eight blocks
// (group(b, count, acc, off) adds group b's terms; called with count = 8 for every full group so
// that those calls fold the count tests away), and int_dot.h's final reduction.
template <typename F, int kRows, int kTokens, typename Group>
[[gnu::always_inline]] inline void tile_frame(int64_t n, float* y, int64_t y_stride, Group group) {
    const int64_t n_blocks = n / 32;
    __m256 acc[kRows][kTokens], off[kRows][kTokens];
    for (int r = 0; r < kRows; ++r)
        for (int t = 0; t < kTokens; ++t) acc[r][t] = off[r][t] = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= n_blocks; b += 8) group(b, 8, acc, off);
    if (b < n_blocks) group(b, int(n_blocks - b), acc, off);
    for (int r = 0; r < kRows; ++r)
        for (int t = 0; t < kTokens; ++t)
            y[t * y_stride + r] = F::kOffset ? reduce8(acc[r][t]) + reduce8(off[r][t]) : reduce8(acc[r][t]);
}

// How a kernel reads the weights it prefetches. Decode's tiles read each line once: they prefetch
// as stream_prefetch() says (isa.h: PREFETCHNTA on AMD, which keeps the lines out of L2 and L3;
// there one thread's decode tile streamed Q8_0 27 → 40 GB/s and Q4_K 21 → 32 GB/s from DRAM, and
// the bench mock's Q4_K_M decoded 9% faster). Kernels whose later token groups read the rows
// again (the multi-token tiles, AVX2's eight-token tiles) take them into L2. So do prefill's lane
// kernels for now, although they read the rows once into their panels: PREFETCHNTA has not been
// measured there.
enum class WeightReads { once, again };

[[gnu::always_inline]] inline void prefetch_line(uintptr_t line, bool non_temporal) {
    if (non_temporal) _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_NTA);
    else _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T1);
}

// Bytes [begin, begin + count) of `rows` rows (`stride` apart) from `first` (into L2, or past it
// where non_temporal).
[[gnu::always_inline]] inline void prefetch_span(const uint8_t* first, size_t stride, int rows, size_t begin, size_t count,
                                                 bool non_temporal = false) {
    for (int r = 0; r < rows; ++r) {
        const uintptr_t start = reinterpret_cast<uintptr_t>(first + size_t(r) * stride + begin);
        for (uintptr_t line = start & ~uintptr_t(63); line < start + count; line += 64) prefetch_line(line, non_temporal);
    }
}

// The tiles stream their weights from memory, a few rows interleaved: rows of a few KiB are too
// short for the hardware prefetcher to follow, so each tile prefetches the same blocks of the
// tile `ahead` rows on, whole tiles at least kPrefetchBytes<kReads> ahead. One tile ahead (2 KiB
// of 1024-wide Q4_K rows) arrived late: decode stalled on each block's first load (on Zen 4 a
// microbenchmark of the Q4_K decode tile streamed 11 GB/s from DRAM one tile ahead, 14-20 GB/s
// from 4-16 KiB ahead). Further than decode needs costs: on Zen 5, one thread's tg128 of the
// bench mock rose 16% and of its Q4_K_M 14% from 16 KiB to 4 KiB ahead, two threads' 7-9%
// (2 KiB was slower, 3-8 KiB level), as every prefetch past a matrix's last row (each
// expert's) reads bytes nobody uses and a new matrix starts unprefetched for longer. Prefill's
// kernels, which read rows again, keep 16 KiB.
template <WeightReads kReads>
inline constexpr size_t kPrefetchBytes = kReads == WeightReads::once ? 4096 : 16384;

template <WeightReads kReads>
inline size_t prefetch_rows_ahead(int tile_rows, size_t row_stride) {
    const size_t tile_bytes = size_t(tile_rows) * row_stride;
    return size_t(tile_rows) *
           (tile_bytes == 0 ? 1 : std::max<size_t>(1, (kPrefetchBytes<kReads> + tile_bytes - 1) / tile_bytes));
}

// Group b of the tile `ahead` rows on, while the tile's own group is multiplied, for the kernels
// that read rows again (decode's tiles take DecodePrefetch below).
template <typename F, int kRows>
[[gnu::always_inline]] inline void prefetch_next_tile(const uint8_t* w, size_t w_stride, int64_t b, size_t ahead) {
    prefetch_span(w + ahead * w_stride, w_stride, kRows, size_t(b) * F::kBytes, 8 * F::kBytes);
}

// Decode's prefetch (WeightReads::once) for a tile of kRows rows that it reads in `steps` steps
// (groups of blocks, or blocks), step s being bytes [s · step_bytes, (s + 1) · step_bytes) of each
// row: at step s, the step's share of the tile prefetch_rows_ahead rows on. Where the rows lie back
// to back (a matrix's rows do) that tile is one span, taken in address order, a share of its lines
// per step. Row by row, each row's slice of the step, a short row's lines came as interleaved
// streams of a few lines, some asked for twice: one thread (Zen 5, AVX2) streamed the bench mock's
// 544-byte expert rows at 10-13 GB/s where 2-KiB rows took 20, in one span at 17-18, and its tg128
// rose a median 27%.
template <int kRows>
class DecodePrefetch {
public:
    DecodePrefetch(const uint8_t* w, size_t w_stride, size_t row_bytes, int64_t steps, size_t step_bytes)
        : next_(w + prefetch_rows_ahead<WeightReads::once>(kRows, w_stride) * w_stride), stride_(w_stride),
          span_end_(reinterpret_cast<uintptr_t>(next_) + size_t(kRows) * row_bytes), step_bytes_(step_bytes),
          share_(w_stride != row_bytes || steps <= 0 ? 0 : (size_t(kRows) * row_bytes + size_t(steps) * 64 - 1) / (size_t(steps) * 64) * 64),
          non_temporal_(stream_prefetch() == StreamPrefetch::non_temporal) {}

    [[gnu::always_inline]] void operator()(int64_t step) const {
        if (share_ == 0) return prefetch_span(next_, stride_, kRows, size_t(step) * step_bytes_, step_bytes_, non_temporal_);
        const uintptr_t from = (reinterpret_cast<uintptr_t>(next_) & ~uintptr_t(63)) + size_t(step) * share_;
        for (uintptr_t line = from; line < std::min(span_end_, from + share_); line += 64) prefetch_line(line, non_temporal_);
    }

private:
    const uint8_t* next_;
    size_t stride_;
    uintptr_t span_end_;
    size_t step_bytes_, share_;  // share_: bytes of the span a step (0: row by row)
    bool non_temporal_;
};

// A tile of kRows weight rows (w_stride bytes apart) times kTokens activation rows (act_stride
// bytes apart): each group of eight weight blocks is decoded once for every token, each group of
// activation blocks loaded once for every row, and every (row, token) pair keeps its own
// accumulators through the same float steps as a one-row, one-token call, so results are
// identical. The Level supplies
//   struct Weight;  static Weight weight(__m256i levels);
//   static __m256i product(const Weight&, __m256i activation): 8 int32 lanes totalling Σ w·a;
//   static __m256i unsigned_product(__m256i u, __m256i activation): the same of unsigned bytes u
//   (DecodeLevels' form; with pair sums, u·127 pairs must fit int16), and
//   add_unsigned_product(acc, u, activation): acc plus those;
//   kPairSums, and where true static __m256i widen(__m256i pairs): the 8 int32 sums of
//   neighbouring int16 lanes (maddubs' pair sums; LanesBlock).
template <typename F, typename Level>
struct TileBlock {
    using Act = int_formats::ActBlock<F>;
    using Form = DecodeLevels<F, Level>;
    using Groups = typename DecodeGroupsOf<Level, F, Form::kBias>::type;
    static constexpr bool kGroupDecode = Form::kUnsigned && !std::is_void_v<Groups>;
    // Two or three tokens of the 4-bit code formats take decode's path too, each row's group
    // decoded once for all of them: their unsigned group products beat the multi-token tiles'
    // sign step (int_dot_tile).
    static constexpr bool kSharedDecode = kGroupDecode && kNibbleCodes<F, Form::kBias>;

    // One token's group of `count` activation blocks as decode multiplies them block by block:
    // their bytes (zeros past count), the bias times each block's sum (zero without a bias),
    // their scales and, for the offset formats, their block sums (the multi-token tiles take the
    // bytes, scales and sums alone: kDecode false). The alignment is spelled out because in a
    // target region GCC 12's std::vector allocates a type that holds vector registers with the
    // plain operator new, 16-byte aligned.
    struct alignas(64) BlockActs {
        __m256i qs[8];
        __m256i bias_totals;
        __m256 d, s;
    };
    template <bool kDecode = true>
    [[gnu::always_inline]] static BlockActs block_acts(const uint8_t* act, int64_t b, int count) {
        const Act* a = reinterpret_cast<const Act*>(act) + b;
        BlockActs g;
        for (int j = 0; j < 8; ++j)
            g.qs[j] = j < count ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[j].qs)) : _mm256_setzero_si256();
        g.d = f16_lanes(reinterpret_cast<const uint8_t*>(&a->d), sizeof(Act), count);
        g.s = _mm256_setzero_ps();
        if constexpr (F::kOffset) g.s = f16_lanes(reinterpret_cast<const uint8_t*>(&a->s), sizeof(Act), count);
        g.bias_totals = _mm256_setzero_si256();
        if constexpr (kDecode && Form::kUnsigned && Form::kBias != 0) {
            __m256i p[8];
            for (int j = 0; j < 8; ++j) p[j] = Level::unsigned_product(_mm256_set1_epi8(char(Form::kBias)), g.qs[j]);
            g.bias_totals = block_totals(p);
        }
        return g;
    }
    // The same for a full group arranged for the Groups decoder.
    template <typename G>
    struct alignas(64) GroupActs {
        typename G::Acts acts;
        __m256i bias_totals;
        __m256 d, s;
    };
    // A token's full group as decode's tiles take it: DecodeActs(act, b) arranges it once for all
    // of a call's tiles (decode_tiles), where each tile arranged it again (a quarter of MXFP4
    // decode's instructions at four rows a tile).
    using DecodeActs = std::conditional_t<kGroupDecode, GroupActs<Groups>, BlockActs>;
    [[gnu::always_inline]] static DecodeActs decode_acts(const uint8_t* act, int64_t b) {
        const BlockActs g = block_acts(act, b, 8);
        if constexpr (kGroupDecode) return {Groups::acts(g.qs), g.bias_totals, g.d, g.s};
        else return g;
    }

    // kTokens tokens, the way decode takes one (and kSharedDecode two or three), with their full
    // groups arranged in `arranged` (token t's at t · (n / 256)) when not null.
    template <int kRows, int kTokens>
    static void run(const uint8_t* w, size_t w_stride, const uint8_t* act, size_t act_stride, int64_t n, float* y,
                    int64_t y_stride, const DecodeActs* arranged = nullptr) {
        const size_t ahead = prefetch_rows_ahead<WeightReads::again>(kRows, w_stride);
        const DecodePrefetch<kRows> decode_prefetch(w, w_stride, size_t(n / 32) * F::kBytes, (n / 32 + 7) / 8, 8 * F::kBytes);
        constexpr bool kDecodeWay = kTokens == 1 || (kSharedDecode && kTokens <= 3);
        tile_frame<F, kRows, kTokens>(n, y, y_stride, [&](int64_t b, int count, auto& acc, auto& off) __attribute__((always_inline)) {
            if constexpr (kDecodeWay) decode_prefetch(b / 8);
            else prefetch_next_tile<F, kRows>(w, w_stride, b, ahead);
            const auto add_terms = [&](int r, int t, __m256i totals, __m256 w_d, __m256 w_m, __m256 act_d, __m256 act_s)
                                       __attribute__((always_inline)) {
                acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(w_d, act_d), _mm256_cvtepi32_ps(totals), acc[r][t]);
                if constexpr (F::kOffset) off[r][t] = _mm256_fmadd_ps(w_m, act_s, off[r][t]);
            };
            if constexpr (kDecodeWay) {
                // Decode: each row's levels are used once, so they are decoded where they are
                // multiplied (decoding all rows' first spilled registers), in DecodeLevels' form.
                // The rows' loops are unrolled: rolled, GCC kept the accumulators on the stack, a
                // load and a store per row and group (AVX2's MXFP4 and Q8_0 tiles 7% slower).
                const auto block_by_block = [&](const BlockActs& g, int count, int t) __attribute__((always_inline)) {
#pragma GCC unroll 8
                    for (int r = 0; r < kRows; ++r) {
                        const uint8_t* wb = w + size_t(r) * w_stride + b * F::kBytes;
                        const __m256 w_m = F::kOffset ? f16_lanes(wb + 2, F::kBytes, count) : _mm256_setzero_ps();
                        __m256i p[8];
                        for (int j = 0; j < 8; ++j) {
                            if (j >= count) p[j] = _mm256_setzero_si256();
                            else if constexpr (Form::kUnsigned)
                                p[j] = Level::unsigned_product(biased_levels<F, Form::kBias>(wb + j * F::kBytes), g.qs[j]);
                            else p[j] = Level::product(Level::weight(levels<F>(wb + j * F::kBytes)), g.qs[j]);
                        }
                        add_terms(r, t, _mm256_sub_epi32(block_totals(p), g.bias_totals), weight_scales<F>(wb, count), w_m, g.d, g.s);
                    }
                };
                if (count < 8) {
                    for (int t = 0; t < kTokens; ++t) block_by_block(block_acts(act + size_t(t) * act_stride, b, count), count, t);
                } else if constexpr (!kGroupDecode) {
                    if (arranged) block_by_block(arranged[b / 8], 8, 0);
                    else block_by_block(decode_acts(act, b), 8, 0);
                } else {
                    const auto by_groups = [&](const DecodeActs* const (&g)[kTokens]) __attribute__((always_inline)) {
                        const typename Groups::Acts* acts[kTokens];
                        for (int t = 0; t < kTokens; ++t) acts[t] = &g[t]->acts;
#pragma GCC unroll 8
                        for (int r = 0; r < kRows; ++r) {
                            const uint8_t* wb = w + size_t(r) * w_stride + b * F::kBytes;
                            const __m256 w_m = F::kOffset ? f16_lanes(wb + 2, F::kBytes, 8) : _mm256_setzero_ps();
                            __m256i totals[kTokens];
                            Groups::template token_totals<kTokens>(wb, acts, totals);
                            const __m256 w_d = Groups::scales(wb);
                            for (int t = 0; t < kTokens; ++t)
                                add_terms(r, t, _mm256_sub_epi32(totals[t], g[t]->bias_totals), w_d, w_m, g[t]->d, g[t]->s);
                        }
                    };
                    if (arranged) {
                        const DecodeActs* g[kTokens];
                        for (int t = 0; t < kTokens; ++t) g[t] = arranged + t * (n / 256) + b / 8;
                        by_groups(g);
                    } else {
                        // Nothing arranged (int_dot, tile_products' last tokens): each token's group here.
                        DecodeActs own[kTokens];
                        const DecodeActs* g[kTokens];
                        for (int t = 0; t < kTokens; ++t) {
                            own[t] = decode_acts(act + size_t(t) * act_stride, b);
                            g[t] = &own[t];
                        }
                        by_groups(g);
                    }
                }
            } else {
                typename Level::Weight wl[kRows][8];
                __m256 w_d[kRows], w_m[kRows];
                group_weights<F, Level, kRows, false>(w, w_stride, b, count, wl, w_d, w_m);
                for (int t = 0; t < kTokens; ++t) {
                    const BlockActs g = block_acts<false>(act + size_t(t) * act_stride, b, count);
                    for (int r = 0; r < kRows; ++r) {
                        __m256i p[8];
                        for (int j = 0; j < 8; ++j) p[j] = Level::product(wl[r][j], g.qs[j]);
                        add_terms(r, t, block_totals(p), w_d[r], w_m[r], g.d, g.s);
                    }
                }
            }
        });
    }
};

template <typename F, typename Level>
float int_dot(const void* weight_row, const void* act_row, int64_t n) {
    float y;
    TileBlock<F, Level>::template run<1, 1>(static_cast<const uint8_t*>(weight_row), 0,
                                            static_cast<const uint8_t*>(act_row), 0, n, &y, 0);
    return y;
}

// Every token through block(std::integral_constant<int, kTokens>, first token's act, its y):
// fours, then the last one to three together.
template <typename Block>
void split_tokens(const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t y_stride, Block block) {
    int64_t t = 0;
    for (; t + 4 <= n_tokens; t += 4) block(std::integral_constant<int, 4>{}, act + size_t(t) * act_stride, y + t * y_stride);
    const uint8_t* rest = act + size_t(t) * act_stride;
    float* const y_rest = y + t * y_stride;
    switch (n_tokens - t) {
        case 3: block(std::integral_constant<int, 3>{}, rest, y_rest); break;
        case 2: block(std::integral_constant<int, 2>{}, rest, y_rest); break;
        case 1: block(std::integral_constant<int, 1>{}, rest, y_rest); break;
        default: break;
    }
}

// Every row through rows(std::integral_constant<int, count>, first row): kRows at a time, the
// rows left over one at a time.
template <int kRows, typename Rows>
void split_rows(int64_t n_rows, Rows rows) {
    int64_t r = 0;
    for (; r + kRows <= n_rows; r += kRows) rows(std::integral_constant<int, kRows>{}, r);
    for (; r < n_rows; ++r) rows(std::integral_constant<int, 1>{}, r);
}

// The products of n_rows by n_tokens through BlockOf::run<kRows, kTokens> tiles (TileBlock),
// kRows rows at a time.
template <int kRows, typename BlockOf>
void tile_products(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act, size_t act_stride,
                   int64_t n_tokens, int64_t n, float* y, int64_t y_stride) {
    split_rows<kRows>(n_rows, [&](auto rows, int64_t r) {
        split_tokens(act, act_stride, n_tokens, y + r, y_stride, [&](auto tokens, const uint8_t* a, float* y_tile) {
            BlockOf::template run<decltype(rows)::value, decltype(tokens)::value>(w + size_t(r) * w_stride, w_stride, a,
                                                                                 act_stride, n, y_tile, y_stride);
        });
    });
}

// Decode's tiles of four rows for kTokens tokens (one, or TileBlock::kSharedDecode's two or
// three) with the tokens' full groups arranged once for all of them, in this thread's buffer
// (grown to the widest rows, then reused).
template <typename F, typename Level, int kTokens>
void decode_tiles(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act, size_t act_stride, int64_t n, float* y,
                  int64_t y_stride) {
    using Block = TileBlock<F, Level>;
    thread_local std::vector<typename Block::DecodeActs> arranged;
    const int64_t full_groups = n / 256;
    if (arranged.size() < size_t(kTokens * full_groups)) arranged.resize(size_t(kTokens * full_groups));
    for (int t = 0; t < kTokens; ++t)
        for (int64_t g = 0; g < full_groups; ++g)
            arranged[size_t(t * full_groups + g)] = Block::decode_acts(act + size_t(t) * act_stride, 8 * g);
    split_rows<4>(n_rows, [&](auto rows, int64_t r) {
        Block::template run<decltype(rows)::value, kTokens>(w + size_t(r) * w_stride, w_stride, act, act_stride, n, y + r, y_stride,
                                                            arranged.data());
    });
}

// Four rows per tile for one to three tokens (decode: independent accumulator chains sharing the
// activation loads), two for more (measured: four rows by four tokens spill the decoded weights
// and are slower; the eight-block horizontal sums, not the decode, bound them: matmul gives
// prefill to the lane kernels below instead). The 4-bit code formats take two or three tokens
// through decode's tiles (TileBlock::kSharedDecode).
template <typename F, typename Level>
void int_dot_tile(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_rows, size_t act_stride,
                  int64_t n_tokens, int64_t n, float* y, int64_t y_stride) {
    const auto* w = static_cast<const uint8_t*>(weight_rows);
    const auto* act = static_cast<const uint8_t*>(act_rows);
    if (n_tokens == 1) return decode_tiles<F, Level, 1>(w, weight_stride, n_rows, act, act_stride, n, y, y_stride);
    if constexpr (TileBlock<F, Level>::kSharedDecode) {
        if (n_tokens == 2) return decode_tiles<F, Level, 2>(w, weight_stride, n_rows, act, act_stride, n, y, y_stride);
        if (n_tokens == 3) return decode_tiles<F, Level, 3>(w, weight_stride, n_rows, act, act_stride, n, y, y_stride);
    }
    if (n_tokens < 4) tile_products<4, TileBlock<F, Level>>(w, weight_stride, n_rows, act, act_stride, n_tokens, n, y, y_stride);
    else tile_products<2, TileBlock<F, Level>>(w, weight_stride, n_rows, act, act_stride, n_tokens, n, y, y_stride);
}

// The levels plus a bias as the unsigned bytes of maddubs (the lane kernels' Weight where
// LanesBlock::kUnsignedLevels).
template <int kBias>
struct BiasedLevels {
    using Weight = __m256i;
    static Weight weight(__m256i levels) { return _mm256_add_epi8(levels, _mm256_set1_epi8(char(kBias))); }
};

// The tile of TileBlock on lane-packed activations (int_dot.h, ActLaneGroup), for prefill at
// the levels with maddubs' pair sums (AVX2; AVX-512 VNNI has RowLanes below): a call's groups
// outermost, so that each group's weight levels are decoded and transposed to the lane layout
// once per row for all of the call's tokens (up to kTokenChunk), and a (row, token) pair costs
// eight products and adds with each block's sum in its own lane, then the same float steps into
// accumulators kept in memory across the groups (a load and a store per group).
template <typename F, typename Level>
struct LanesBlock {
    static_assert(Level::kPairSums);
    // The formats of small levels take them plus a bias as unsigned bytes, biased by their
    // largest magnitude, with the bias times the activations' block sums (ActLaneGroup::sums)
    // taken off once per token and group, so that no product needs a sign step: one maddubs per
    // product, kPairRun pair sums added in int16 (they stay under 2^15) before one widening. The
    // offset formats' levels are unsigned already (bias 0); Q8_0's and IQ4_NL's would overflow
    // the pair sums and keep the sign step.
    static constexpr int kBias = F::kOffset ? 0 : F::kMaxLevel;
    static constexpr int kLargest = kBias + F::kMaxLevel;
    static constexpr bool kUnsignedLevels = kLargest <= 32;
    static constexpr int kPairRun = 8 * 2 * kLargest * 127 <= INT16_MAX ? 8 : 4;
    static_assert(!kUnsignedLevels || kPairRun * 2 * kLargest * 127 <= INT16_MAX);
    using WeightLevel = std::conditional_t<kUnsignedLevels, BiasedLevels<kBias>, Level>;
    // The levels with the sign step take the tokens kSignedTokens at a time for each row, their
    // block sums in registers: a row's decoded weights, read from the stack once per block for
    // kSignedTokens products instead of once per product, took a 512 × 2048 matrix times 64
    // tokens from 52 to 54.5 GMAC/s in Q8_0 and from 52.7 to 54.5 in IQ4_NL (Zen 3, best of 30,
    // three interleaved runs; four or five tokens measured level with one, eight level with six).
    static constexpr int kSignedTokens = 6;
    // The tokens of one call: their accumulators live on the stack. Each chunk decodes and
    // transposes its rows' weights again: 64 tokens instead of 16 took a 256 × 2048 matrix times
    // 64 tokens from 67 to 73 GMAC/s in MXFP4 and from 46 to 49 in Q8_0 (Zen 5, best of 4).
    static constexpr int64_t kTokenChunk = 64;

    // Group b's integer block sums of row r's unsigned levels wl with the token's activations qs.
    [[gnu::always_inline]] static __m256i unsigned_block_sums(const __m256i (&wl)[8], const __m256i (&qs)[8], __m256i bias_sums) {
        __m256i sums = _mm256_setzero_si256();
        for (int k0 = 0; k0 < 8; k0 += kPairRun) {
            __m256i pairs = _mm256_maddubs_epi16(wl[k0], qs[k0]);
            for (int k = k0 + 1; k < k0 + kPairRun; ++k) pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(wl[k], qs[k]));
            sums = _mm256_add_epi32(sums, Level::widen(pairs));
        }
        return _mm256_sub_epi32(sums, bias_sums);
    }

    // kRows weight rows times n_tokens <= kTokenChunk lane-packed activation rows.
    template <int kRows>
    static void run(const uint8_t* w, size_t w_stride, const uint8_t* act, size_t act_stride, int64_t n_tokens, int64_t n,
                    float* y, int64_t y_stride) {
        __m256 acc[kTokenChunk][kRows], off[F::kOffset ? kTokenChunk : 1][kRows];
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int r = 0; r < kRows; ++r) acc[t][r] = off[F::kOffset ? t : 0][r] = _mm256_setzero_ps();
        const size_t ahead = prefetch_rows_ahead<WeightReads::again>(kRows, w_stride);
        const auto group = [&](int64_t b, int count) __attribute__((always_inline)) {
            prefetch_next_tile<F, kRows>(w, w_stride, b, ahead);
            typename WeightLevel::Weight wl[kRows][8];
            __m256 w_d[kRows], w_m[kRows];
            group_weights<F, WeightLevel, kRows, true>(w, w_stride, b, count, wl, w_d, w_m);
            const auto lanes = [&](int64_t t) -> const ActLaneGroup& {
                return reinterpret_cast<const ActLaneGroup*>(act + size_t(t) * act_stride)[b / 8];
            };
            if constexpr (kUnsignedLevels) {
                for (int64_t t = 0; t < n_tokens; ++t) {
                    const ActLaneGroup& a = lanes(t);
                    __m256i qs[8];
                    for (int k = 0; k < 8; ++k) qs[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs + 32 * k));
                    const __m256 act_d = _mm256_loadu_ps(a.d);
                    __m256i bias_sums = _mm256_setzero_si256();
                    if constexpr (kBias != 0)
                        bias_sums = _mm256_mullo_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.sums)), _mm256_set1_epi32(kBias));
                    for (int r = 0; r < kRows; ++r) {
                        const __m256i sums = unsigned_block_sums(wl[r], qs, bias_sums);
                        acc[t][r] = _mm256_fmadd_ps(_mm256_mul_ps(w_d[r], act_d), _mm256_cvtepi32_ps(sums), acc[t][r]);
                        if constexpr (F::kOffset) off[t][r] = _mm256_fmadd_ps(w_m[r], _mm256_loadu_ps(a.s), off[t][r]);
                    }
                }
            } else {
                const auto tokens = [&](auto count, int64_t t0) __attribute__((always_inline)) {
                    constexpr int kCount = decltype(count)::value;
                    for (int r = 0; r < kRows; ++r) {
                        __m256i sums[kCount];
                        for (int i = 0; i < kCount; ++i) sums[i] = _mm256_setzero_si256();
                        for (int k = 0; k < 8; ++k)
                            for (int i = 0; i < kCount; ++i)
                                sums[i] = _mm256_add_epi32(
                                    sums[i], Level::product(wl[r][k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes(t0 + i).qs + 32 * k))));
                        for (int i = 0; i < kCount; ++i)
                            acc[t0 + i][r] = _mm256_fmadd_ps(_mm256_mul_ps(w_d[r], _mm256_loadu_ps(lanes(t0 + i).d)),
                                                             _mm256_cvtepi32_ps(sums[i]), acc[t0 + i][r]);
                    }
                };
                int64_t t = 0;
                for (; t + kSignedTokens <= n_tokens; t += kSignedTokens) tokens(std::integral_constant<int, kSignedTokens>{}, t);
                for (; t < n_tokens; ++t) tokens(std::integral_constant<int, 1>{}, t);
            }
        };
        // Full groups with a constant count, so that its tests fold away.
        const int64_t n_blocks = n / 32;
        int64_t b = 0;
        for (; b + 8 <= n_blocks; b += 8) group(b, 8);
        if (b < n_blocks) group(b, int(n_blocks - b));
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int r = 0; r < kRows; ++r)
                y[t * y_stride + r] = F::kOffset ? reduce8(acc[t][r]) + reduce8(off[t][r]) : reduce8(acc[t][r]);
    }
};

// Eight rows per tile, the rows left over four and then one at a time; the tokens in chunks of
// LanesBlock::kTokenChunk. Each token's activations are loaded once for all of a tile's rows:
// eight rows instead of four took a 256 × 2048 matrix times 64 tokens from 89 to 92-94 GMAC/s
// in MXFP4 and from 59 to 61-62 in Q8_0 (Zen 5, best of 4 interleaved invocations); sixteen
// measured level with eight.
template <typename F, typename Level>
void int_dot_lanes(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_rows, size_t act_stride,
                   int64_t n_tokens, int64_t n, float* y, int64_t y_stride) {
    using Block = LanesBlock<F, Level>;
    const auto* w = static_cast<const uint8_t*>(weight_rows);
    const auto* act = static_cast<const uint8_t*>(act_rows);
    const auto tile = [&](auto rows, int64_t r) {
        for (int64_t t0 = 0; t0 < n_tokens; t0 += Block::kTokenChunk)
            Block::template run<decltype(rows)::value>(w + size_t(r) * weight_stride, weight_stride, act + size_t(t0) * act_stride,
                                                       act_stride, std::min(Block::kTokenChunk, n_tokens - t0), n,
                                                       y + t0 * y_stride + r, y_stride);
    };
    const int64_t eights = n_rows / 8 * 8;
    split_rows<8>(eights, tile);
    split_rows<4>(n_rows - eights, [&](auto rows, int64_t r) { tile(rows, eights + r); });
}

// A lane kernel's call (IntDotLanesFn) through Kernel::chunk (RowLanes, LaneTiles): rows in
// panels of Kernel::kRows, tokens in chunks of Kernel::kChunkTokens. A panel's weights are
// decoded once, by its first chunk, into Kernel::Panel scratch that the later chunks reuse
// (decoding was a sixth of a 32-token chunk's time; a 33rd token cost another sixth).
template <typename Kernel>
void lane_chunks(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_rows, size_t act_stride,
                 int64_t n_tokens, int64_t n, float* y, int64_t y_stride) {
    const auto* w = static_cast<const uint8_t*>(weight_rows);
    const auto* act = static_cast<const uint8_t*>(act_rows);
    thread_local std::vector<typename Kernel::Panel> panels;
    if (panels.size() < size_t(Kernel::panel_count(n))) panels.resize(size_t(Kernel::panel_count(n)));
    for (int64_t r0 = 0; r0 < n_rows; r0 += Kernel::kRows)
        for (int64_t t0 = 0; t0 < n_tokens; t0 += Kernel::kChunkTokens)
            Kernel::chunk(w + size_t(r0) * weight_stride, weight_stride, int(std::min<int64_t>(Kernel::kRows, n_rows - r0)),
                          act + size_t(t0) * act_stride, act_stride, std::min<int64_t>(Kernel::kChunkTokens, n_tokens - t0), n,
                          y + t0 * y_stride + r0, y_stride, panels.data(), t0 == 0);
}

// Prefill on lane-packed activations with the rows in the lanes (V: a register policy with
// vpdpbusd, zmm_lanes.h's sixteen rows at AVX-512 VNNI): per group of eight blocks, V::kWidth
// weight rows' levels plus kBias are decoded as unsigned bytes and transposed once for all tokens
// (a panel: lane r of each register is row r; lane_chunks), so that each byte product takes one
// activation quad broadcast to every lane (vpdpbusd) and leaves the rows' block sums in one
// register; the bias times the token's block sum comes off as one broadcast, and each block's
// float steps (int_dot.h) apply lane-wise to accumulators per token and block % 8, reduced in
// int_dot.h's order at the end.
template <typename F, typename V>
struct RowLanes {
    using I = typename V::I;
    using Fv = typename V::F;
    static constexpr int kBias = F::kOffset ? 0 : 128;  // any int8 level + 128 is a byte
    static_assert(F::kMaxLevel <= 128);
    static constexpr int kRows = V::kWidth, kPanels = kRows / 8, kTokenGroup = 4;
    static constexpr int64_t kChunkTokens = 32;

    // One group of eight blocks of kRows rows, as kPanels ymm of eight rows each.
    // alignas: lane_chunks' std::vector of panels must not take the 16 bytes GCC gives __m256i
    // outside a target region that enables AVX.
    struct alignas(64) Panel {
        __m256i q[8][8][kPanels];                // [block j][quad k]: lane r row r's levels 4k..4k+3 + kBias
        __m256 d[8][kPanels], m[8][kPanels];     // block j's scale and offset (F::kOffset) of each row
    };

    // Rows [8h, 8h + 8) of the panel's `rows` (the lanes past it repeat the last row, never
    // stored) into its ymm h; blocks past count are zeros.
    [[gnu::always_inline]] static void decode_eight(const uint8_t* w, size_t w_stride, int rows, int64_t b, int count, int h,
                                                    Panel& p) {
        __m256i levels[8][8];  // [row][block]
        __m256 d[8], m[8];
        for (int r = 0; r < 8; ++r) {
            const uint8_t* wb = w + size_t(std::min(8 * h + r, rows - 1)) * w_stride + b * F::kBytes;
            for (int j = 0; j < 8; ++j)
                levels[r][j] = j < count ? biased_levels<F, kBias>(wb + j * F::kBytes) : _mm256_setzero_si256();
            d[r] = weight_scales<F>(wb, count);
            if constexpr (F::kOffset) m[r] = f16_lanes(wb + 2, F::kBytes, count);
        }
        for (int j = 0; j < 8; ++j) {
            __m256i v[8];
            for (int r = 0; r < 8; ++r) v[r] = levels[r][j];
            transpose_lanes(v);
            for (int k = 0; k < 8; ++k) p.q[j][k][h] = v[k];
        }
        const auto to_lanes = [h](__m256 (&rows_of)[8], __m256 (&out)[8][kPanels]) __attribute__((always_inline)) {
            __m256i v[8];
            for (int r = 0; r < 8; ++r) v[r] = _mm256_castps_si256(rows_of[r]);
            transpose_lanes(v);
            for (int j = 0; j < 8; ++j) out[j][h] = _mm256_castsi256_ps(v[j]);
        };
        to_lanes(d, p.d);
        if constexpr (F::kOffset) to_lanes(m, p.m);
    }

    static int64_t panel_count(int64_t n) { return (n / 32 + 7) / 8; }

    // Rows [0, rows <= kRows) by tokens [0, n_tokens <= kChunkTokens); the rows' groups decoded
    // into panels[0, panel_count(n)) first where `decode`, else as an earlier chunk left them.
    static void chunk(const uint8_t* w, size_t w_stride, int rows, const uint8_t* act, size_t act_stride, int64_t n_tokens,
                      int64_t n, float* y, int64_t y_stride, Panel* panels, bool decode) {
        Fv acc[kChunkTokens][8], off[F::kOffset ? kChunkTokens : 1][8];
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int j = 0; j < 8; ++j) acc[t][j] = off[F::kOffset ? t : 0][j] = V::zero();
        const int64_t n_blocks = n / 32;
        const size_t ahead = prefetch_rows_ahead<WeightReads::again>(kRows, w_stride);
        for (int64_t b = 0; b < n_blocks; b += 8) {
            const int count = int(std::min<int64_t>(8, n_blocks - b));
            Panel& p = panels[b / 8];
            if (decode) {
                prefetch_next_tile<F, kRows>(w, w_stride, b, ahead);
                for (int h = 0; h < kPanels; ++h) decode_eight(w, w_stride, rows, b, count, h, p);
            }
            for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenGroup) {
                const int tokens = int(std::min<int64_t>(kTokenGroup, n_tokens - t0));
                const ActLaneGroup* a[kTokenGroup];
                for (int t = 0; t < kTokenGroup; ++t)
                    a[t] = reinterpret_cast<const ActLaneGroup*>(act + size_t(t0 + std::min(t, tokens - 1)) * act_stride) + b / 8;
                for (int j = 0; j < count; ++j) {
                    I q[8];
                    for (int k = 0; k < 8; ++k) q[k] = V::iload(p.q[j][k]);
                    const Fv d = load_lanes(p.d[j]);
                    for (int t = 0; t < kTokenGroup; ++t) {
                        // Two chains of four, so that the products' latency overlaps; the low
                        // one starts from minus the bias times the block's activation sum.
                        I low = V::ibroadcast(-kBias * a[t]->sums[j]), high = V::izero();
                        for (int k = 0; k < 4; ++k) {
                            low = V::dot_unsigned(low, q[k], quad(a[t]->qs + 32 * k + 4 * j));
                            high = V::dot_unsigned(high, q[k + 4], quad(a[t]->qs + 32 * (k + 4) + 4 * j));
                        }
                        if (t >= tokens) continue;
                        Fv& sum = acc[t0 + t][j];
                        sum = V::fmadd(V::mul(d, V::set1(a[t]->d[j])), V::to_float(V::iadd(low, high)), sum);
                        if constexpr (F::kOffset) off[t0 + t][j] = V::fmadd(load_lanes(p.m[j]), V::set1(a[t]->s[j]), off[t0 + t][j]);
                    }
                }
            }
        }
        for (int64_t t = 0; t < n_tokens; ++t)
            V::store_rows(y + t * y_stride, F::kOffset ? V::add(reduce(acc[t]), reduce(off[t])) : reduce(acc[t]), rows);
    }

    // A panel's f32 register (kPanels ymm).
    [[gnu::always_inline]] static Fv load_lanes(const __m256 (&halves)[kPanels]) { return V::load(reinterpret_cast<const float*>(halves)); }

    // int_dot.h's reduction of a token's eight accumulators: ((0+4)+(2+6))+((1+5)+(3+7)).
    [[gnu::always_inline]] static Fv reduce(const Fv (&v)[8]) {
        return V::add(V::add(V::add(v[0], v[4]), V::add(v[2], v[6])), V::add(V::add(v[1], v[5]), V::add(v[3], v[7])));
    }

    // Four activation bytes in every lane.
    [[gnu::always_inline]] static I quad(const int8_t* p) {
        int32_t v;
        std::memcpy(&v, p, 4);
        return V::ibroadcast(v);
    }

};

}  // namespace
}  // namespace k3::kernels::int_simd
