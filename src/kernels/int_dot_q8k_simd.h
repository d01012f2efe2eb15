// The SIMD × Q8_K kernels (int_dot.h, "× Q8_K"): each weight block is decoded in registers
// (levels by shuffles, ands, shifts and grid loads; integer slot scales from the packed scale
// bytes) and multiplied by maddubs, or at the VNNI level by vpdpbusd; the integer slot scales are
// applied to the 16-bit pair sums by a Products policy:
//   static __m256i add_scaled(__m256i acc, __m256i pairs, __m256i scales): acc + madd(pairs, scales);
//   kByteDots, and where true static __m256i byte_dot(__m256i u, __m256i s): lane l = Σ of the 4
//   products of unsigned u and signed s bytes 4l..4l+3 (vpdpbusd), used for the unsigned levels.
// Tiles of several rows and tokens share one horizontal sum and one f32 fma per block; prefill's
// lane kernels (LaneTiles) put eight rows in the lanes and need none. Include
// only inside a target region that enables at least avx2,fma,f16c, after every system header;
// the functions live in an unnamed namespace so each including file has its own copies.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "kernels/int_dot_q8k.h"
#include "kernels/int_dot_q8k_formats.h"
#include "kernels/int_dot_simd.h"
#include "kernels/quant_unpack.h"

// The decoders and block sums are inlined into each tile, so that a block's registers never go
// through memory (GCC otherwise calls one shared copy of the block sum).
#define K3_Q8K_INLINE [[gnu::always_inline]] inline

namespace k3::kernels::q8k_simd {
namespace {

// How a format's Decoded::q holds its levels: unsigned (maddubs' unsigned operand as they are),
// signed (multiplied as |q| times a with q's sign), or magnitudes with the signs apart (±1 bytes).
enum class Levels { unsigned_levels, signed_levels, magnitudes_and_signs };

// A weight block in registers. q[k] holds elements 32k..32k+31 (slots 2k and 2k+1).
struct Decoded {
    __m256i q[8];
    __m256i signs[8];     // ±1 per element (magnitudes_and_signs)
    __m256i scales;       // int16; lane k of the low half: slot 2k's scale, of the high half: slot 2k+1's
    __m256i slot_scales;  // int16 slot j's scale in lane j (the formats with a level bias)
    __m256i mins;         // int16 slot j's min in lane j (the offset formats)
};

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Sub-blocks of 32: 8 scale bytes (low half of `bytes`) -> Decoded::scales.
inline __m256i scales_of_8(__m128i bytes, bool is_signed) {
    return _mm256_broadcastsi128_si256(is_signed ? _mm_cvtepi8_epi16(bytes) : _mm_cvtepu8_epi16(bytes));
}
// Sub-blocks of 16: 16 signed scale bytes in slot order -> Decoded::scales (even slots, then odd).
inline __m256i scales_of_16(__m128i bytes) {
    const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(bytes, even_odd));
}
// 8 unsigned bytes per sub-block of 32 -> one int16 per slot.
inline __m256i slots_of_8(__m128i bytes) {
    return _mm256_cvtepu8_epi16(_mm_shuffle_epi8(bytes, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7)));
}
inline __m256i mask8(int bits) { return _mm256_set1_epi8(char(bits)); }
// Bit `bit` of every byte, as 0 or 1.
inline __m256i bit_of(__m256i bytes, int bit) { return _mm256_and_si256(_mm256_srli_epi16(bytes, bit), mask8(1)); }
// Bits 2s..2s+1 of every byte of the Q2_K/Q3_K level bytes: group 4h + s from qs[32h ..].
inline void two_bit_levels(const uint8_t* qs, __m256i* q) {
    for (int h = 0; h < 2; ++h) {
        const __m256i v = load32(qs + 32 * h);
        for (int s = 0; s < 4; ++s) q[4 * h + s] = _mm256_and_si256(_mm256_srli_epi16(v, 2 * s), mask8(3));
    }
}

// Per format: kLevels, kBiasShift (levels stored as level + 2^shift, the bias taken off with
// the activation's slot sums; negative: none) and decode(block, Decoded&); the unsigned-level
// formats also kLargestLevel (of Decoded::q) and kScalesPer32 (both 16-value slots of a
// sub-block of 32 share one scale), for the lane kernels.
template <typename Format>
struct Simd;

template <>
struct Simd<q8k_formats::Q2K> {
    static constexpr Levels kLevels = Levels::unsigned_levels;
    static constexpr int kBiasShift = -1;
    static constexpr int kLargestLevel = 3;
    static constexpr bool kScalesPer32 = false;
    K3_Q8K_INLINE static void decode(const tensor::BlockQ2_K& b, Decoded& out) {
        two_bit_levels(b.qs, out.q);
        const __m128i bytes = load16(b.scales);
        out.scales = scales_of_16(_mm_and_si128(bytes, _mm_set1_epi8(15)));
        out.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15)));
    }
};

template <>
struct Simd<q8k_formats::Q3K> {
    static constexpr Levels kLevels = Levels::unsigned_levels;
    static constexpr int kBiasShift = 2;  // level + 4 = the two bits | the hmask bit << 2
    static constexpr int kLargestLevel = 7;
    static constexpr bool kScalesPer32 = false;
    K3_Q8K_INLINE static void decode(const tensor::BlockQ3_K& b, Decoded& out) {
        two_bit_levels(b.qs, out.q);
        const __m256i hmask = load32(b.hmask);
        for (int k = 0; k < 8; ++k) out.q[k] = _mm256_or_si256(out.q[k], _mm256_slli_epi16(bit_of(hmask, k), 2));
        // Slot j's 6 bits: low nibble from byte j % 8 (its high nibble for j >= 8), the top two
        // from bits 2(j/4).. of byte 8 + j % 4; stored + 32.
        const uint32_t w0 = tensor::load_u32(b.scales), w1 = tensor::load_u32(b.scales + 4), w2 = tensor::load_u32(b.scales + 8);
        const auto slots_of = [w2](uint32_t low_nibbles, int high_shift) {
            return (low_nibbles & 0x0f0f0f0fu) | ((w2 >> high_shift) & 0x03030303u) << 4;
        };
        const __m128i stored = _mm_setr_epi32(int32_t(slots_of(w0, 0)), int32_t(slots_of(w1, 2)),
                                              int32_t(slots_of(w0 >> 4, 4)), int32_t(slots_of(w1 >> 4, 6)));
        const __m128i bytes = _mm_sub_epi8(stored, _mm_set1_epi8(32));
        out.scales = scales_of_16(bytes);
        out.slot_scales = _mm256_cvtepi8_epi16(bytes);
    }
};

template <int Bits, typename Block>
struct Simd<q8k_formats::Q45K<Bits, Block>> {
    static constexpr Levels kLevels = Levels::unsigned_levels;
    static constexpr int kBiasShift = -1;
    static constexpr int kLargestLevel = (1 << Bits) - 1;
    static constexpr bool kScalesPer32 = true;
    K3_Q8K_INLINE static void decode(const Block& b, Decoded& out) {
        for (int c = 0; c < 4; ++c) {
            const __m256i v = load32(b.qs + 32 * c);
            out.q[2 * c] = _mm256_and_si256(v, mask8(15));
            out.q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask8(15));
        }
        if constexpr (Bits == 5) {
            const __m256i qh = load32(b.qh);
            for (int k = 0; k < 8; ++k) out.q[k] = _mm256_or_si256(out.q[k], _mm256_slli_epi16(bit_of(qh, k), 4));
        }
        // The 12 scale bytes: sub-block k < 4 has scale = byte k & 63 and min = byte k + 4 & 63;
        // k >= 4 takes its low four bits from byte k + 4 (scale: low nibble, min: high) and its
        // top two from bits 6..7 of byte k - 4 (scale) or byte k (min).
        const uint32_t w0 = tensor::load_u32(b.scales), w1 = tensor::load_u32(b.scales + 4), w2 = tensor::load_u32(b.scales + 8);
        const uint32_t scales_high = (w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u);
        const uint32_t mins_high = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u);
        out.scales = scales_of_8(_mm_setr_epi32(int32_t(w0 & 0x3f3f3f3fu), int32_t(scales_high), 0, 0), false);
        out.mins = slots_of_8(_mm_setr_epi32(int32_t(w1 & 0x3f3f3f3fu), int32_t(mins_high), 0, 0));
    }
};

template <>
struct Simd<q8k_formats::Q6K> {
    static constexpr Levels kLevels = Levels::unsigned_levels;
    static constexpr int kBiasShift = 5;  // level + 32
    static constexpr int kLargestLevel = 63;
    static constexpr bool kScalesPer32 = false;
    K3_Q8K_INLINE static void decode(const tensor::BlockQ6_K& b, Decoded& out) {
        const __m256i bits45 = mask8(0x30);
        for (int h = 0; h < 2; ++h) {
            const __m256i ql0 = load32(b.ql + 64 * h), ql1 = load32(b.ql + 64 * h + 32), qh = load32(b.qh + 32 * h);
            // Group g: 4 low bits from ql, bits 2g..2g+1 of qh moved to bits 4..5.
            out.q[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, mask8(15)), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
            out.q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, mask8(15)), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
            out.q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), mask8(15)), _mm256_and_si256(qh, bits45));
            out.q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), mask8(15)),
                                               _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
        }
        const __m128i bytes = load16(b.scales);
        out.scales = scales_of_16(bytes);
        out.slot_scales = _mm256_cvtepi8_epi16(bytes);
    }
};

template <>
struct Simd<q8k_formats::Iq4xs> {
    static constexpr Levels kLevels = Levels::signed_levels;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq4xs& b, Decoded& out) {
        const __m256i table = _mm256_broadcastsi128_si256(load16(tensor::kIq4nlValues));
        for (int s = 0; s < 8; ++s) {
            const __m128i v = load16(b.qs + 16 * s);
            const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), mask8(15));
            out.q[s] = _mm256_shuffle_epi8(table, nibbles);
        }
        uint64_t bytes = 0;
        for (int s = 0; s < 8; ++s) bytes |= uint64_t(uint8_t(tensor::iq4xs_sub_scale(b, s))) << (8 * s);
        out.scales = scales_of_8(_mm_cvtsi64_si128(int64_t(bytes)), true);
    }
};

// The sign bytes (+1, or −1 where the bit is set) of each 7-bit IQ sign field.
inline constexpr std::array<uint64_t, 128> kIqSignBytes = [] {
    std::array<uint64_t, 128> table{};
    for (unsigned field = 0; field < 128; ++field)
        for (int e = 0; e < 8; ++e)
            table[field] |= uint64_t(tensor::kIqSignsFrom7Bits[field] >> e & 1 ? 0xff : 0x01) << (8 * e);
    return table;
}();

template <>
struct Simd<q8k_formats::Iq2xxs> {
    static constexpr Levels kLevels = Levels::magnitudes_and_signs;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq2xxs& b, Decoded& out) {
        const auto& grid = tensor::kIq2xxsGrid;
        uint64_t scale_bytes = 0;
        for (int s = 0; s < 8; ++s) {
            const uint8_t* sub = b.qs + 8 * s;
            const uint32_t signs_scale = tensor::load_u32(sub + 4);
            out.q[s] = _mm256_setr_epi64x(int64_t(grid[sub[0]]), int64_t(grid[sub[1]]), int64_t(grid[sub[2]]), int64_t(grid[sub[3]]));
            out.signs[s] = _mm256_setr_epi64x(int64_t(kIqSignBytes[signs_scale & 127]), int64_t(kIqSignBytes[(signs_scale >> 7) & 127]),
                                              int64_t(kIqSignBytes[(signs_scale >> 14) & 127]),
                                              int64_t(kIqSignBytes[(signs_scale >> 21) & 127]));
            scale_bytes |= uint64_t(2 * (signs_scale >> 28) + 1) << (8 * s);
        }
        out.scales = scales_of_8(_mm_cvtsi64_si128(int64_t(scale_bytes)), false);
    }
};

// IQ1: 8·g per byte of grid values g in {−1, 0, 1} (the bits a 16-bit shift carries into the
// next byte masked off); the levels are 8g ± 1.
K3_Q8K_INLINE __m256i eight_times(__m256i grid_values) { return _mm256_and_si256(_mm256_slli_epi16(grid_values, 3), mask8(0xf8)); }

template <>
struct Simd<q8k_formats::Iq1m> {
    static constexpr Levels kLevels = Levels::signed_levels;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq1m& b, Decoded& out) {
        // Group g's nibble (nibble g%2 of qh[g/2]): its low three bits extend grid index qs[g],
        // its bit 3 is the sign of δ.
        const __m128i qh = load16(b.qh), seven = _mm_set1_epi8(7);
        const __m128i low = _mm_and_si128(qh, seven), high = _mm_and_si128(_mm_srli_epi16(qh, 4), seven);
        const __m128i index_high[2] = {_mm_unpacklo_epi8(low, high), _mm_unpackhi_epi8(low, high)};
        alignas(32) uint16_t index[32];
        for (int i = 0; i < 2; ++i) {
            const __m256i v = _mm256_or_si256(_mm256_cvtepu8_epi16(load16(b.qs + 16 * i)),
                                              _mm256_slli_epi16(_mm256_cvtepu8_epi16(index_high[i]), 8));
            _mm256_store_si256(reinterpret_cast<__m256i*>(index + 16 * i), v);
        }
        // Byte j of sub-block s is in group 4s + j/8, whose δ sign is bit 3 (j%16 < 8) or 7 of qh[2s + j/16].
        const __m256i qh_both = _mm256_broadcastsi128_si256(qh);
        const __m256i delta_bit = _mm256_setr_epi64x(0x0808080808080808, int64_t(0x8080808080808080ull), 0x0808080808080808,
                                                     int64_t(0x8080808080808080ull));
        const auto& grid = tensor::kIq1sGrid;
        for (int s = 0; s < 8; ++s) {
            const __m256i spread = _mm256_shuffle_epi8(qh_both, _mm256_set_m128i(_mm_set1_epi8(char(2 * s + 1)), _mm_set1_epi8(char(2 * s))));
            const __m256i negative = _mm256_cmpeq_epi8(_mm256_and_si256(spread, delta_bit), delta_bit);
            const __m256i delta = _mm256_or_si256(negative, mask8(1));  // −1 or +1
            const uint16_t* g = index + 4 * s;
            const __m256i points = _mm256_setr_epi64x(int64_t(grid[g[0]]), int64_t(grid[g[1]]), int64_t(grid[g[2]]), int64_t(grid[g[3]]));
            out.q[s] = _mm256_add_epi8(eight_times(points), delta);
        }
        // Slot h's 3-bit scale: bits 3(h%4).. of u16 word h/4. Lane i of each half holds word i/2;
        // the multiply moves the slot's field to bits 13..15.
        const __m256i words = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales))),
                                                  _mm256_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7,  //
                                                                   0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7));
        const __m256i to_top = _mm256_setr_epi16(1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7,  // fields 0, 2
                                                 1 << 10, 1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4);  // fields 1, 3
        const __m256i field = _mm256_srli_epi16(_mm256_mullo_epi16(words, to_top), 13);
        out.scales = _mm256_or_si256(_mm256_slli_epi16(field, 1), _mm256_set1_epi16(1));
    }
};

template <>
struct Simd<q8k_formats::Iq1s> {
    static constexpr Levels kLevels = Levels::signed_levels;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq1s& b, Decoded& out) {
        const auto& grid = tensor::kIq1sGrid;
        uint64_t scale_bytes = 0;
        for (int s = 0; s < 8; ++s) {
            const unsigned qh = tensor::load_u16(b.qh + 2 * s);
            const uint8_t* qs = b.qs + 4 * s;
            const __m256i points = _mm256_setr_epi64x(int64_t(grid[qs[0] | (qh & 7) << 8]), int64_t(grid[qs[1] | ((qh >> 3) & 7) << 8]),
                                                      int64_t(grid[qs[2] | ((qh >> 6) & 7) << 8]), int64_t(grid[qs[3] | ((qh >> 9) & 7) << 8]));
            out.q[s] = _mm256_add_epi8(eight_times(points), mask8(qh & 0x8000 ? -1 : 1));
            scale_bytes |= uint64_t(2 * ((qh >> 12) & 7) + 1) << (8 * s);
        }
        out.scales = scales_of_8(_mm_cvtsi64_si128(int64_t(scale_bytes)), false);
    }
};

// IQ2_XS, IQ2_S: slot h's scale 2ls + 1 from nibble h%2 of scales[h/2].
K3_Q8K_INLINE __m256i iq2_scales(const uint8_t* scales) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales)), fifteen = _mm_set1_epi8(15);
    const __m128i ls = _mm_unpacklo_epi8(_mm_and_si128(bytes, fifteen), _mm_and_si128(_mm_srli_epi16(bytes, 4), fifteen));
    return scales_of_16(_mm_or_si128(_mm_add_epi8(ls, ls), _mm_set1_epi8(1)));
}
// ±1 bytes from 32 sign bits (−1 where set).
K3_Q8K_INLINE __m256i sign_bytes(uint32_t bits) { return _mm256_or_si256(unpack::bytes_of_bits(bits), mask8(1)); }

template <>
struct Simd<q8k_formats::Iq2xs> {
    static constexpr Levels kLevels = Levels::magnitudes_and_signs;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq2xs& b, Decoded& out) {
        const auto& grid = tensor::kIq2xsGrid;
        for (int s = 0; s < 8; ++s) {
            unsigned code[4];
            for (int g = 0; g < 4; ++g) code[g] = tensor::load_u16(b.qs + 8 * s + 2 * g);
            out.q[s] = _mm256_setr_epi64x(int64_t(grid[code[0] & 511]), int64_t(grid[code[1] & 511]), int64_t(grid[code[2] & 511]),
                                          int64_t(grid[code[3] & 511]));
            out.signs[s] = _mm256_setr_epi64x(int64_t(kIqSignBytes[code[0] >> 9]), int64_t(kIqSignBytes[code[1] >> 9]),
                                              int64_t(kIqSignBytes[code[2] >> 9]), int64_t(kIqSignBytes[code[3] >> 9]));
        }
        out.scales = iq2_scales(b.scales);
    }
};

template <>
struct Simd<q8k_formats::Iq2s> {
    static constexpr Levels kLevels = Levels::magnitudes_and_signs;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq2s& b, Decoded& out) {
        const auto& grid = tensor::kIq2sGrid;
        for (int s = 0; s < 8; ++s) {
            const uint8_t* low = b.grid_low + 4 * s;
            const unsigned qh = b.qh[s];
            out.q[s] = _mm256_setr_epi64x(int64_t(grid[low[0] | (qh & 3) << 8]), int64_t(grid[low[1] | ((qh >> 2) & 3) << 8]),
                                          int64_t(grid[low[2] | ((qh >> 4) & 3) << 8]), int64_t(grid[low[3] | ((qh >> 6) & 3) << 8]));
            out.signs[s] = sign_bytes(tensor::load_u32(b.signs + 4 * s));
        }
        out.scales = iq2_scales(b.scales);
    }
};

template <>
struct Simd<q8k_formats::Iq3xxs> {
    static constexpr Levels kLevels = Levels::magnitudes_and_signs;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq3xxs& b, Decoded& out) {
        const auto& grid = tensor::kIq3xxsGrid;
        uint64_t scale_bytes = 0;
        for (int s = 0; s < 8; ++s) {
            const uint8_t* k = b.qs + 8 * s;
            out.q[s] = _mm256_setr_epi32(int32_t(grid[k[0]]), int32_t(grid[k[1]]), int32_t(grid[k[2]]), int32_t(grid[k[3]]),
                                         int32_t(grid[k[4]]), int32_t(grid[k[5]]), int32_t(grid[k[6]]), int32_t(grid[k[7]]));
            const uint32_t signs_scale = tensor::load_u32(b.scales_signs + 4 * s);
            out.signs[s] = _mm256_setr_epi64x(int64_t(kIqSignBytes[signs_scale & 127]), int64_t(kIqSignBytes[(signs_scale >> 7) & 127]),
                                              int64_t(kIqSignBytes[(signs_scale >> 14) & 127]),
                                              int64_t(kIqSignBytes[(signs_scale >> 21) & 127]));
            scale_bytes |= uint64_t(2 * (signs_scale >> 28) + 1) << (8 * s);
        }
        out.scales = scales_of_8(_mm_cvtsi64_si128(int64_t(scale_bytes)), false);
    }
};

template <>
struct Simd<q8k_formats::Iq3s> {
    static constexpr Levels kLevels = Levels::magnitudes_and_signs;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockIq3s& b, Decoded& out) {
        const auto& grid = tensor::kIq3sGrid;
        uint64_t scale_bytes = 0;
        for (int s = 0; s < 8; ++s) {
            const uint8_t* k = b.qs + 8 * s;
            const unsigned qh = b.qh[s];
            out.q[s] = _mm256_setr_epi32(int32_t(grid[k[0] | (qh & 1) << 8]), int32_t(grid[k[1] | (qh & 2) << 7]),
                                         int32_t(grid[k[2] | (qh & 4) << 6]), int32_t(grid[k[3] | (qh & 8) << 5]),
                                         int32_t(grid[k[4] | (qh & 16) << 4]), int32_t(grid[k[5] | (qh & 32) << 3]),
                                         int32_t(grid[k[6] | (qh & 64) << 2]), int32_t(grid[k[7] | (qh & 128) << 1]));
            out.signs[s] = sign_bytes(tensor::load_u32(b.signs + 4 * s));
            scale_bytes |= uint64_t(2 * ((b.scales[s / 2] >> (4 * (s % 2))) & 15) + 1) << (8 * s);
        }
        out.scales = scales_of_8(_mm_cvtsi64_si128(int64_t(scale_bytes)), false);
    }
};

template <>
struct Simd<q8k_formats::Tq1> {
    static constexpr Levels kLevels = Levels::signed_levels;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockTq1_0& b, Decoded& out) {
        const __m256i first = load32(b.qs), rest = _mm256_castsi128_si256(load16(b.qs + 32));
        for (int t = 0; t < 5; ++t) out.q[t] = unpack::tq1_levels(first, t);
        // Elements 160 + 16t + l: trit t of qs[32 + l]; 240 + 4t + j: trit t of qh[j].
        __m128i rest_levels[5];
        for (int t = 0; t < 5; ++t) rest_levels[t] = _mm256_castsi256_si128(unpack::tq1_levels(rest, t));
        alignas(16) int8_t high[16];
        for (int t = 0; t < 4; ++t)
            for (int j = 0; j < 4; ++j) high[4 * t + j] = int8_t(tensor::tq1_trit(b.qh[j], t) - 1);
        out.q[5] = _mm256_set_m128i(rest_levels[1], rest_levels[0]);
        out.q[6] = _mm256_set_m128i(rest_levels[3], rest_levels[2]);
        out.q[7] = _mm256_set_m128i(_mm_load_si128(reinterpret_cast<const __m128i*>(high)), rest_levels[4]);
        out.scales = _mm256_set1_epi16(1);
    }
};

template <>
struct Simd<q8k_formats::Tq2> {
    static constexpr Levels kLevels = Levels::signed_levels;
    static constexpr int kBiasShift = -1;
    K3_Q8K_INLINE static void decode(const tensor::BlockTq2_0& b, Decoded& out) {
        two_bit_levels(b.qs, out.q);
        for (int k = 0; k < 8; ++k) out.q[k] = _mm256_sub_epi8(out.q[k], mask8(1));
        out.scales = _mm256_set1_epi16(1);
    }
};

// The integer sum of one decoded block with one activation block, spread over 8 int32 lanes.
template <typename Format, typename Products>
K3_Q8K_INLINE __m256i block_sum(const Decoded& w, const ActBlockQ8_K& a) {
    __m256i acc = _mm256_setzero_si256();
    if constexpr (Products::kByteDots && Simd<Format>::kLevels == Levels::unsigned_levels) {
        // Groups k, k+1 by byte dots; each 4-product sum fits int16 (levels < 64), so the pair packs
        // into one register: slots 2k, 2k+2 in the low half, 2k+1, 2k+3 in the high half.
        for (int k = 0; k < 8; k += 2) {
            const __m256i packed = _mm256_packs_epi32(Products::byte_dot(w.q[k], load32(a.qs + 32 * k)),
                                                      Products::byte_dot(w.q[k + 1], load32(a.qs + 32 * k + 32)));
            const __m256i pick = _mm256_setr_epi64x(int64_t(0x0001000100010001ull * uint64_t((2 * k + 1) << 8 | 2 * k)),
                                                    int64_t(0x0001000100010001ull * uint64_t((2 * k + 3) << 8 | (2 * k + 2))),
                                                    int64_t(0x0001000100010001ull * uint64_t((2 * k + 1) << 8 | 2 * k)),
                                                    int64_t(0x0001000100010001ull * uint64_t((2 * k + 3) << 8 | (2 * k + 2))));
            acc = Products::add_scaled(acc, packed, _mm256_shuffle_epi8(w.scales, pick));
        }
    } else {
        for (int k = 0; k < 8; ++k) {
            const __m256i act = load32(a.qs + 32 * k);
            __m256i pairs;
            if constexpr (Simd<Format>::kLevels == Levels::unsigned_levels) pairs = _mm256_maddubs_epi16(w.q[k], act);
            else if constexpr (Simd<Format>::kLevels == Levels::signed_levels)
                pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w.q[k], w.q[k]), _mm256_sign_epi8(act, w.q[k]));
            else pairs = _mm256_maddubs_epi16(w.q[k], _mm256_sign_epi8(act, w.signs[k]));
            const __m256i pick = _mm256_set1_epi16(int16_t((2 * k + 1) << 8 | 2 * k));  // lane k of each half
            acc = Products::add_scaled(acc, pairs, _mm256_shuffle_epi8(w.scales, pick));
        }
    }
    if constexpr (Simd<Format>::kBiasShift >= 0) {
        const __m256i bias = _mm256_madd_epi16(load32(a.bsums), w.slot_scales);
        acc = _mm256_sub_epi32(acc, _mm256_slli_epi32(bias, Simd<Format>::kBiasShift));
    }
    return acc;
}

// Lane i: the sum of the 8 lanes of s[i].
K3_Q8K_INLINE __m128i sums_of_4(const __m256i* s) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Four blocks' d (or dmin): their f16 bits times the format's kDFactor. Built from registers:
// four two-byte stores read back as one load would stall store forwarding.
template <typename Format>
K3_Q8K_INLINE __m128 weight_factors(const uint16_t (&f16_bits)[4]) {
    const __m128 value = _mm_cvtph_ps(_mm_setr_epi16(short(f16_bits[0]), short(f16_bits[1]), short(f16_bits[2]), short(f16_bits[3]), 0, 0, 0, 0));
    if constexpr (Format::kDFactor != 1.0f) return _mm_mul_ps(value, _mm_set1_ps(Format::kDFactor));
    return value;
}

// One block's d (or dmin) in every lane (from a register: an f16 array stored and loaded whole
// would stall store forwarding).
template <typename Format>
K3_Q8K_INLINE __m256 weight_factor_lanes(uint16_t f16_bits) {
    const __m256 value = _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(f16_bits)));
    if constexpr (Format::kDFactor != 1.0f) return _mm256_mul_ps(value, _mm256_set1_ps(Format::kDFactor));
    return value;
}

// Block b of the tile kRows · ahead rows on (prefetch_rows_ahead), while the tile's own block is
// multiplied, for the kernels that read rows again (decode's tiles take decode_prefetch below).
template <typename Block, int kRows>
K3_Q8K_INLINE void prefetch_next_tile(const uint8_t* weights, size_t weight_stride, int64_t b, size_t ahead) {
    int_simd::prefetch_span(weights + ahead * weight_stride, weight_stride, kRows, size_t(b) * sizeof(Block), sizeof(Block));
}

// Decode's prefetch of a tile of kRows rows of n values, a block a step.
template <typename Block, int kRows>
K3_Q8K_INLINE int_simd::DecodePrefetch<kRows> decode_prefetch(const uint8_t* weights, size_t weight_stride, int64_t n) {
    return {weights, weight_stride, size_t(n / 256) * sizeof(Block), n / 256, sizeof(Block)};
}

// kRows weight rows × kTokens activation rows: lane kTokens·r + t of the accumulators is
// (row r, token t), each weight block decoded once for the tile's tokens.
template <typename Format, typename Products, int kRows, int kTokens>
void tile(const uint8_t* weights, size_t weight_stride, const uint8_t* act, size_t act_stride, int64_t n, float* y,
          int64_t y_stride) {
    static_assert(kRows * kTokens <= 4);
    using Block = typename Format::BlockType;
    __m128 acc = _mm_setzero_ps(), off = _mm_setzero_ps();
    const size_t ahead = int_simd::prefetch_rows_ahead<int_simd::WeightReads::again>(kRows, weight_stride);
    const auto prefetch = decode_prefetch<Block, kRows>(weights, weight_stride, n);
    for (int64_t b = 0; b < n / 256; ++b) {
        if constexpr (kTokens == 1) prefetch(b);
        else prefetch_next_tile<Block, kRows>(weights, weight_stride, b, ahead);
        // Each lane is set once (the lanes past the tile's zeroed one by one: an aggregate's
        // zero-initialisation compiled to two rep stos per block, a sixth of decode's time).
        __m256i sums[4], mins[4];
        uint16_t d_bits[4], dmin_bits[4];
        for (int lane = kRows * kTokens; lane < 4; ++lane) {
            sums[lane] = mins[lane] = _mm256_setzero_si256();
            d_bits[lane] = dmin_bits[lane] = 0;
        }
        // Unrolled: rolled, GCC stored each row's sums and read them back (AVX2's Q6_K tile 5% slower).
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
            const Block& w = reinterpret_cast<const Block*>(weights + size_t(r) * weight_stride)[b];
            Decoded decoded;
            Simd<Format>::decode(w, decoded);
            for (int t = 0; t < kTokens; ++t) {
                const ActBlockQ8_K& a = reinterpret_cast<const ActBlockQ8_K*>(act + size_t(t) * act_stride)[b];
                const int lane = kTokens * r + t;
                sums[lane] = block_sum<Format, Products>(decoded, a);
                d_bits[lane] = Format::d_bits(w);
                if constexpr (Format::kOffset) {
                    mins[lane] = _mm256_madd_epi16(load32(a.bsums), decoded.mins);
                    dmin_bits[lane] = Format::dmin_bits(w);
                }
            }
        }
        // Lane kTokens·r + t takes token t's d, read from the activations themselves: four
        // stores into an array read back as one load stalled store forwarding (an eighth of
        // AVX2 Q4_K decode).
        const auto act_d = [&](int lane) {
            return lane < kRows * kTokens ? reinterpret_cast<const ActBlockQ8_K*>(act + size_t(lane % kTokens) * act_stride)[b].d : 0.0f;
        };
        const __m128 da = _mm_setr_ps(act_d(0), act_d(1), act_d(2), act_d(3));
        const __m128 d = _mm_mul_ps(weight_factors<Format>(d_bits), da);
        acc = _mm_fmadd_ps(d, _mm_cvtepi32_ps(sums_of_4(sums)), acc);
        if constexpr (Format::kOffset) {
            const __m128 dmin = _mm_mul_ps(weight_factors<Format>(dmin_bits), da);
            off = _mm_fmadd_ps(dmin, _mm_cvtepi32_ps(sums_of_4(mins)), off);
        }
    }
    alignas(16) float out[4];
    _mm_store_ps(out, _mm_sub_ps(acc, off));
    for (int r = 0; r < kRows; ++r)
        for (int t = 0; t < kTokens; ++t) y[t * y_stride + r] = out[kTokens * r + t];
}

template <typename Format, typename Products>
float int_dot(const void* weight_row, const void* act_row, int64_t n) {
    float y;
    tile<Format, Products, 1, 1>(static_cast<const uint8_t*>(weight_row), 0, static_cast<const uint8_t*>(act_row), 0, n, &y, 0);
    return y;
}

// kTokens activation rows with every weight row: kRows rows at a time, the last rows one by one.
template <typename Format, typename Products, int kRows, int kTokens>
void rows_of_tiles(const uint8_t* rows, size_t weight_stride, int64_t n_rows, const uint8_t* act, size_t act_stride, int64_t n,
                   float* y, int64_t y_stride) {
    int64_t r = 0;
    for (; r + kRows <= n_rows; r += kRows)
        tile<Format, Products, kRows, kTokens>(rows + size_t(r) * weight_stride, weight_stride, act, act_stride, n, y + r, y_stride);
    for (; r < n_rows; ++r)
        tile<Format, Products, 1, kTokens>(rows + size_t(r) * weight_stride, weight_stride, act, act_stride, n, y + r, y_stride);
}

// Prefill without AMX: n_tokens (a multiple of 8) in groups of eight, lane t of a row's f32
// accumulators holding token t, so that a block's eight integer sums take one transposing sum
// (block_totals) and one fma instead of a horizontal sum and a scalar fma each. Rows go in
// chunks of four that stay in L1 across the groups; within a group each decoded block serves
// eight tokens and each block of the eight tokens' activations, in L1, four rows.
template <typename Format, typename Products>
void eight_token_tiles(const uint8_t* weights, size_t weight_stride, int64_t n_rows, const uint8_t* act, size_t act_stride,
                       int64_t n_tokens, int64_t n, float* y, int64_t y_stride) {
    using Block = typename Format::BlockType;
    constexpr int kChunkRows = 4, kTokens = 8;
    const size_t ahead = int_simd::prefetch_rows_ahead<int_simd::WeightReads::again>(kChunkRows, weight_stride);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kChunkRows) {
        const int rows = int(n_rows - r0 < kChunkRows ? n_rows - r0 : kChunkRows);
        const uint8_t* chunk = weights + size_t(r0) * weight_stride;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokens) {
            __m256 acc[kChunkRows], off[kChunkRows];
            for (int r = 0; r < kChunkRows; ++r) acc[r] = off[r] = _mm256_setzero_ps();
            for (int64_t b = 0; b < n / 256; ++b) {
                prefetch_next_tile<Block, kChunkRows>(chunk, weight_stride, b, ahead);
                const ActBlockQ8_K* a[kTokens];
                for (int t = 0; t < kTokens; ++t) a[t] = reinterpret_cast<const ActBlockQ8_K*>(act + size_t(t0 + t) * act_stride) + b;
                const __m256 d_act = _mm256_setr_ps(a[0]->d, a[1]->d, a[2]->d, a[3]->d, a[4]->d, a[5]->d, a[6]->d, a[7]->d);
                for (int r = 0; r < rows; ++r) {
                    const Block& w = reinterpret_cast<const Block*>(chunk + size_t(r) * weight_stride)[b];
                    Decoded decoded;
                    Simd<Format>::decode(w, decoded);
                    __m256i sums[kTokens];
                    for (int t = 0; t < kTokens; ++t) sums[t] = block_sum<Format, Products>(decoded, *a[t]);
                    const __m256 d = _mm256_mul_ps(weight_factor_lanes<Format>(Format::d_bits(w)), d_act);
                    acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(int_simd::block_totals(sums)), acc[r]);
                    if constexpr (Format::kOffset) {
                        for (int t = 0; t < kTokens; ++t) sums[t] = _mm256_madd_epi16(load32(a[t]->bsums), decoded.mins);
                        const __m256 dmin = _mm256_mul_ps(weight_factor_lanes<Format>(Format::dmin_bits(w)), d_act);
                        off[r] = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(int_simd::block_totals(sums)), off[r]);
                    }
                }
            }
            for (int r = 0; r < rows; ++r) {
                alignas(32) float out[kTokens];
                _mm256_store_ps(out, _mm256_sub_ps(acc[r], off[r]));
                for (int t = 0; t < kTokens; ++t) y[(t0 + t) * y_stride + r0 + r] = out[t];
            }
        }
    }
}

// A Products policy may bring its own decode tiles for a format (wider registers):
//   template <typename Format> static void decode_rows(weights, weight_stride, n_rows, act_row, n, y).
template <typename Format, typename Products>
concept OwnDecodeRows = requires { &Products::template decode_rows<Format>; };

// IntDotTileFn: eight tokens at a time (prefill), then four, each row with all of them while it
// is in L1; then the last 1-3 tokens in tiles of four rows × 1 token (decode, or the policy's
// own), two rows × 2 tokens or one row × 3 tokens.
template <typename Format, typename Products>
void int_dot_tile(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_rows, size_t act_stride,
                  int64_t n_tokens, int64_t n, float* y, int64_t y_stride) {
    const auto* rows = static_cast<const uint8_t*>(weight_rows);
    const auto* act = static_cast<const uint8_t*>(act_rows);
    const int64_t eights = n_tokens / 8 * 8;
    eight_token_tiles<Format, Products>(rows, weight_stride, n_rows, act, act_stride, eights, n, y, y_stride);
    act += size_t(eights) * act_stride;
    y += eights * y_stride;
    n_tokens -= eights;
    const int64_t t = n_tokens / 4 * 4;
    for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t t4 = 0; t4 < t; t4 += 4)
            tile<Format, Products, 1, 4>(rows + size_t(r) * weight_stride, 0, act + size_t(t4) * act_stride, act_stride, n,
                                         y + t4 * y_stride + r, y_stride);
    const uint8_t* rest = act + size_t(t) * act_stride;
    float* y_rest = y + t * y_stride;
    switch (n_tokens - t) {
        case 3: rows_of_tiles<Format, Products, 1, 3>(rows, weight_stride, n_rows, rest, act_stride, n, y_rest, y_stride); break;
        case 2: rows_of_tiles<Format, Products, 2, 2>(rows, weight_stride, n_rows, rest, act_stride, n, y_rest, y_stride); break;
        case 1:
            if constexpr (OwnDecodeRows<Format, Products>) Products::template decode_rows<Format>(rows, weight_stride, n_rows, rest, n, y_rest);
            else rows_of_tiles<Format, Products, 4, 1>(rows, weight_stride, n_rows, rest, act_stride, n, y_rest, y_stride);
            break;
        default: break;
    }
}

// Prefill on lane-packed activations (int_dot.h, ActLaneGroup) for the formats of unsigned
// levels, with the rows in the lanes: V::kWidth weight rows' blocks are decoded and transposed
// once for all tokens (a panel: lane r of each register is row r; int_simd::lane_chunks), so
// that each byte product takes one activation quad broadcast to every lane and leaves the rows'
// sums in one register; the slot scales (Products::lane_sums), bias and mins apply per lane,
// and the block's integer sum of each row is whole in its lane, with no horizontal sums. Up to
// kChunkTokens tokens keep their accumulators on the stack.
//   Products::lane_scales(int32 scales): the form lane_sums takes;
//   Products::lane_sums<kLargestLevel, kScalesPer32>(acc, q, act, even, odd): lane r = acc_r +
//   even_r · Σ_{k<4} q[k]·act[k] + odd_r · Σ_{k>=4} q[k]·act[k] over lane r's four bytes;
//   Products::add_scaled(acc, pairs, scales): acc + the int16 pair products of pairs and scales;
// both for V's registers.
template <typename Format, typename Products, typename V = int_simd::YmmLanes>
struct LaneTiles {
    using Block = typename Format::BlockType;
    using Traits = Simd<Format>;
    using I = typename V::I;
    using F = typename V::F;
    static_assert(Traits::kLevels == Levels::unsigned_levels);
    static constexpr int kRows = V::kWidth, kPanels = kRows / 8, kTokenGroup = 4;
    static constexpr int64_t kChunkTokens = 64;
    // A token's multiply-adds of the mins: one per pair of slots, or, where a sub-block's two
    // slots share its min, one per pair of sub-blocks against ActLaneGroup::sub_sums (Q4_K's
    // mins took a ninth of its lane kernel's vector multiplies at AVX2 with eight).
    static constexpr int kMinPairs = Traits::kScalesPer32 ? 4 : 8;

    // One block of kRows rows, lane r of every register row r's; each register as kPanels ymm
    // of eight rows each, decoded apart.
    // alignas: lane_chunks' std::vector of panels must not take the 16 bytes GCC gives __m256i
    // outside a target region that enables AVX.
    struct alignas(64) Panel {
        __m256i q[8][8][kPanels];                          // [sub-block j][quad k]
        __m256i even[8][kPanels], odd[8][kPanels];         // sub-block j's two slot scales, Products::lane_scales
        __m256i slot_pairs[8][kPanels];     // int16 pairs: slots 2k and 2k + 1's scales (bias)
        __m256i min_pairs[kMinPairs][kPanels];  // their mins (kScalesPer32: sub-blocks 2k and 2k + 1's)
        __m256 d[kPanels], dmin[kPanels];
    };

    // v[r] holds row r's eight 32-bit lanes; afterwards v[k] lane r is row r's lane k.
    K3_Q8K_INLINE static void rows_to_lanes(__m256i (&v)[8]) { int_simd::transpose_lanes(v); }

    // Decoded::mins with sub-block j's min in both slots of lane j -> lane k < 4: the int16 pair
    // of sub-blocks 2k and 2k + 1's mins.
    K3_Q8K_INLINE static __m256i sub_block_min_pairs(__m256i slot_mins) {
        const __m256i mins = _mm256_and_si256(slot_mins, _mm256_set1_epi32(0xffff));
        return _mm256_permute4x64_epi64(_mm256_packus_epi32(mins, mins), _MM_SHUFFLE(3, 1, 2, 0));
    }

    // Rows [8h, 8h + 8) of the panel's `rows` into its ymm h.
    K3_Q8K_INLINE static void decode_eight(const uint8_t* weights, size_t weight_stride, int rows, int64_t b, int h, Panel& p) {
        Decoded rows_decoded[8];
        uint16_t d_bits[8], dmin_bits[8];
        for (int r = 0; r < 8; ++r) {
            // Lanes past `rows` repeat the last row (never stored; decoding it again is cheaper
            // than copying a decoded block, which the profile showed as memcpy).
            const Block& w = reinterpret_cast<const Block*>(weights + size_t(std::min(8 * h + r, rows - 1)) * weight_stride)[b];
            Traits::decode(w, rows_decoded[r]);
            d_bits[r] = Format::d_bits(w);
            if constexpr (Format::kOffset) dmin_bits[r] = Format::dmin_bits(w);
        }
        for (int j = 0; j < 8; ++j) {
            __m256i v[8];
            for (int r = 0; r < 8; ++r) v[r] = rows_decoded[r].q[j];
            rows_to_lanes(v);
            for (int k = 0; k < 8; ++k) p.q[j][k][h] = v[k];
        }
        __m256i even[8], odd[8];
        for (int r = 0; r < 8; ++r) {
            even[r] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(rows_decoded[r].scales));
            odd[r] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(rows_decoded[r].scales, 1));
        }
        rows_to_lanes(even);
        rows_to_lanes(odd);
        for (int j = 0; j < 8; ++j) {
            p.even[j][h] = Products::lane_scales(even[j]);
            p.odd[j][h] = Products::lane_scales(odd[j]);
        }
        if constexpr (Traits::kBiasShift >= 0) {
            __m256i pairs[8];
            for (int r = 0; r < 8; ++r) pairs[r] = rows_decoded[r].slot_scales;
            rows_to_lanes(pairs);
            for (int k = 0; k < 8; ++k) p.slot_pairs[k][h] = pairs[k];
        }
        if constexpr (Format::kOffset) {
            __m256i pairs[8];
            for (int r = 0; r < 8; ++r) pairs[r] = Traits::kScalesPer32 ? sub_block_min_pairs(rows_decoded[r].mins) : rows_decoded[r].mins;
            rows_to_lanes(pairs);
            for (int k = 0; k < kMinPairs; ++k) p.min_pairs[k][h] = pairs[k];
        }
        p.d[h] = factors(d_bits);
        if constexpr (Format::kOffset) p.dmin[h] = factors(dmin_bits);
    }

    // Eight rows' d (or dmin): their f16 bits times the format's kDFactor, built in registers.
    K3_Q8K_INLINE static __m256 factors(const uint16_t (&bits)[8]) {
        const __m256 value = _mm256_cvtph_ps(_mm_setr_epi16(short(bits[0]), short(bits[1]), short(bits[2]), short(bits[3]), short(bits[4]),
                                                            short(bits[5]), short(bits[6]), short(bits[7])));
        if constexpr (Format::kDFactor != 1.0f) return _mm256_mul_ps(value, _mm256_set1_ps(Format::kDFactor));
        return value;
    }

    // Four activation bytes (or two int16 slot sums) in every lane.
    K3_Q8K_INLINE static I quad(const void* p) {
        int32_t v;
        std::memcpy(&v, p, 4);
        return V::ibroadcast(v);
    }

    static int64_t panel_count(int64_t n) { return n / 256; }

    // Rows [0, rows <= kRows) by tokens [0, n_tokens <= kChunkTokens) of act; the rows' blocks
    // decoded into panels[0, panel_count(n)) first where `decode`, else as an earlier chunk left
    // them (int_simd::lane_chunks).
    static void chunk(const uint8_t* weights, size_t weight_stride, int rows, const uint8_t* act, size_t act_stride,
                      int64_t n_tokens, int64_t n, float* y, int64_t y_stride, Panel* panels, bool decode) {
        F acc[kChunkTokens], off[kChunkTokens];
        for (int64_t t = 0; t < n_tokens; ++t) acc[t] = off[t] = V::zero();
        const size_t ahead = int_simd::prefetch_rows_ahead<int_simd::WeightReads::again>(kRows, weight_stride);
        for (int64_t b = 0; b < n / 256; ++b) {
            Panel& p = panels[b];
            if (decode) {
                prefetch_next_tile<Block, kRows>(weights, weight_stride, b, ahead);
                for (int h = 0; h < kPanels; ++h) decode_eight(weights, weight_stride, rows, b, h, p);
            }
            const F d = V::load(reinterpret_cast<const float*>(p.d));
            for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenGroup) {
                const int count = int(std::min<int64_t>(kTokenGroup, n_tokens - t0));
                const ActLaneGroup* a[kTokenGroup];
                for (int t = 0; t < kTokenGroup; ++t)
                    a[t] = reinterpret_cast<const ActLaneGroup*>(act + size_t(t0 + std::min(t, count - 1)) * act_stride) + b;
                I isum[kTokenGroup];
                for (int t = 0; t < kTokenGroup; ++t) isum[t] = V::izero();
                for (int j = 0; j < 8; ++j) {
                    I q[8];
                    for (int k = 0; k < 8; ++k) q[k] = V::iload(p.q[j][k]);
                    const I even = V::iload(p.even[j]), odd = V::iload(p.odd[j]);
                    for (int t = 0; t < kTokenGroup; ++t) {
                        I quads[8];
                        for (int k = 0; k < 8; ++k) quads[k] = quad(a[t]->qs + 32 * k + 4 * j);
                        isum[t] = Products::template lane_sums<Traits::kLargestLevel, Traits::kScalesPer32>(isum[t], q, quads, even, odd);
                    }
                }
                for (int t = 0; t < count; ++t) {
                    const int16_t* bsums = a[t]->bsums;
                    if constexpr (Traits::kBiasShift >= 0) {
                        I bias = V::izero();
                        for (int k = 0; k < 8; ++k) bias = Products::add_scaled(bias, V::iload(p.slot_pairs[k]), quad(bsums + 2 * k));
                        isum[t] = V::isub(isum[t], V::template ishift_left<Traits::kBiasShift>(bias));
                    }
                    const F da = V::set1(a[t]->d[0]);
                    acc[t0 + t] = V::fmadd(V::mul(d, da), V::to_float(isum[t]), acc[t0 + t]);
                    if constexpr (Format::kOffset) {
                        I mins = V::izero();
                        const int16_t* min_acts = Traits::kScalesPer32 ? a[t]->sub_sums : bsums;
                        for (int k = 0; k < kMinPairs; ++k) mins = Products::add_scaled(mins, V::iload(p.min_pairs[k]), quad(min_acts + 2 * k));
                        const F dmin = V::load(reinterpret_cast<const float*>(p.dmin));
                        off[t0 + t] = V::fmadd(V::mul(dmin, da), V::to_float(mins), off[t0 + t]);
                    }
                }
            }
        }
        for (int64_t t = 0; t < n_tokens; ++t) V::store_rows(y + t * y_stride, V::sub(acc[t], off[t]), rows);
    }

};

// The lane kernel of Format, or null where it has none (levels that are not unsigned bytes).
template <typename Format, typename Products, typename V = int_simd::YmmLanes>
IntDotLanesFn lanes_kernel() {
    if constexpr (Simd<Format>::kLevels == Levels::unsigned_levels) return &int_simd::lane_chunks<LaneTiles<Format, Products, V>>;
    else return nullptr;
}

}  // namespace
}  // namespace k3::kernels::q8k_simd

#undef K3_Q8K_INLINE
