// AVX2 unpacking of the legacy (Q4_0..Q5_1), K (Q2_K..Q6_K), IQ (IQ1_S..IQ4_XS) and ternary
// block formats into one common shape: integer levels plus, per sub-block, a scale and an
// offset, so that
//     value[i] = scale[s]·q[i] (+ offset[s])        for element i of sub-block s,
// with exactly the two f32 roundings of the scalar decoders in src/tensor/ (the offset is the
// negated min where those compute a·q − m, which IEEE defines as a·q + (−m)).
// The decoders (dequant_avx2.cpp) and the dot kernels (AVX2 and AVX-512) are written once over
// this shape; a format only says how to unpack its block. Included only by kernel .cpp files
// that check CPUID before calling.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tensor/block_iq4.h"
#include "tensor/block_iq_grid.h"
#include "tensor/block_kquants.h"
#include "tensor/block_legacy.h"
#include "tensor/block_ternary.h"
#include "tensor/iq_grids.h"
#include "tensor/quant_bytes.h"

#define K3_UNPACK_AVX2 __attribute__((target("avx2")))

namespace k3::kernels::unpack {

struct Unpacked {
    alignas(32) int8_t q[256];   // levels of one block, element order
    float scale[16], offset[16];  // per sub-block
};

K3_UNPACK_AVX2 inline void store32(int8_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
K3_UNPACK_AVX2 inline __m256i load32(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 16 bytes of nibbles -> 32 levels: low nibbles (elements 0..15) in the low lane, high in the high lane.
K3_UNPACK_AVX2 inline __m256i nibbles_of_16(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), mask), _mm_and_si128(v, mask));
}

// 0xFF in byte j where bit j of `bits` is set (32 bits -> 32 bytes).
K3_UNPACK_AVX2 inline __m256i bytes_of_bits(uint32_t bits) {
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(int32_t(bits)), pick);
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// 0xFF in byte l where bit `bit` of bytes[l] is set.
K3_UNPACK_AVX2 inline __m256i bit_set(__m256i bytes, int bit) {
    const __m256i mask = _mm256_set1_epi8(char(1 << bit));
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, mask), mask);
}

// The 2-bit fields of Q2_K/Q3_K: element 128h + 32s + l from bits 2s of qs[32h + l].
K3_UNPACK_AVX2 inline void unpack_two_bit(const uint8_t* qs, int8_t* q) {
    const __m256i three = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
        const __m256i v = load32(qs + 32 * half);
        for (int s = 0; s < 4; ++s)
            store32(q + 128 * half + 32 * s, _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * s)), three));
    }
}

// Each format: block type, elements per block and per sub-block, whether sub-blocks have an
// offset, and unpack().

template <int Bits, bool kHasOffset, typename Block>
struct LegacyFormat {  // Q4_0, Q4_1, Q5_0, Q5_1: one sub-block of 32
    using BlockType = Block;
    static constexpr int kBlockSize = 32, kSubSize = 32;
    static constexpr bool kOffset = kHasOffset;
    K3_UNPACK_AVX2 static void unpack(const Block& block, Unpacked& u) {
        __m256i levels = nibbles_of_16(block.qs);
        if constexpr (Bits == 5) {
            uint32_t qh;
            std::memcpy(&qh, block.qh, 4);
            levels = _mm256_or_si256(levels, _mm256_and_si256(bytes_of_bits(qh), _mm256_set1_epi8(16)));
        }
        u.scale[0] = tensor::load_f16(block.d);
        if constexpr (kHasOffset) {
            u.offset[0] = tensor::load_f16(block.m);  // x = d·q + m
        } else {
            levels = _mm256_sub_epi8(levels, _mm256_set1_epi8(char(1 << (Bits - 1))));  // x = d·(q − 2^(Bits−1))
        }
        store32(u.q, levels);
    }
};

struct Q2KFormat {
    using BlockType = tensor::BlockQ2_K;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = true;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        unpack_two_bit(block.qs, u.q);
        const float d = tensor::load_f16(block.d), dmin = tensor::load_f16(block.dmin);
        for (int s = 0; s < 16; ++s) {
            u.scale[s] = d * float(block.scales[s] & 15);      // x = d·sc·q − dmin·m
            u.offset[s] = -(dmin * float(block.scales[s] >> 4));
        }
    }
};

struct Q3KFormat {
    using BlockType = tensor::BlockQ3_K;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        unpack_two_bit(block.qs, u.q);
        // Element 32g + l loses 4 unless bit g of hmask[l] is set.
        const __m256i hmask = load32(block.hmask), four = _mm256_set1_epi8(4);
        for (int g = 0; g < 8; ++g)
            store32(u.q + 32 * g, _mm256_sub_epi8(load32(u.q + 32 * g), _mm256_andnot_si256(bit_set(hmask, g), four)));
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 16; ++s) u.scale[s] = d * float(tensor::unpack_scale_q3_k(block.scales, s));
    }
};

template <int Bits, typename Block>
struct Q45KFormat {  // Q4_K, Q5_K: eight sub-blocks of 32
    using BlockType = Block;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = true;
    K3_UNPACK_AVX2 static void unpack(const Block& block, Unpacked& u) {
        // Element 64c + l: low nibble of qs[32c + l]; 64c + 32 + l: its high nibble.
        const __m256i mask = _mm256_set1_epi8(15);
        for (int c = 0; c < 4; ++c) {
            const __m256i v = load32(block.qs + 32 * c);
            store32(u.q + 64 * c, _mm256_and_si256(v, mask));
            store32(u.q + 64 * c + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), mask));
        }
        if constexpr (Bits == 5) {  // element 32s + l: +16 if bit s of qh[l]
            const __m256i qh = load32(block.qh), sixteen = _mm256_set1_epi8(16);
            for (int s = 0; s < 8; ++s)
                store32(u.q + 32 * s, _mm256_or_si256(load32(u.q + 32 * s), _mm256_and_si256(bit_set(qh, s), sixteen)));
        }
        const float d = tensor::load_f16(block.d), dmin = tensor::load_f16(block.dmin);
        for (int s = 0; s < 8; ++s) {
            const tensor::ScaleMin sm = tensor::unpack_scale_min_k4(block.scales, s);
            u.scale[s] = d * float(sm.scale);
            u.offset[s] = -(dmin * float(sm.min));
        }
    }
};

struct Q6KFormat {
    using BlockType = tensor::BlockQ6_K;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const __m256i low4 = _mm256_set1_epi8(15), bits45 = _mm256_set1_epi8(0x30), bias = _mm256_set1_epi8(32);
        for (int half = 0; half < 2; ++half) {
            const __m256i ql0 = load32(block.ql + 64 * half), ql1 = load32(block.ql + 64 * half + 32);
            const __m256i qh = load32(block.qh + 32 * half);
            // Group g (elements 128·half + 32g + l): 4 low bits from ql, bits 2g..2g+1 of qh moved to bits 4..5.
            const __m256i high[4] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45),
                                     _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45), _mm256_and_si256(qh, bits45),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)};
            const __m256i low[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                                    _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                    _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
            for (int g = 0; g < 4; ++g)
                store32(u.q + 128 * half + 32 * g, _mm256_sub_epi8(_mm256_or_si256(low[g], high[g]), bias));
        }
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 16; ++s) u.scale[s] = d * float(block.scales[s]);  // x = (d·sc)·(q − 32)
    }
};

// 32 IQ4 codes (nibble layout as Q4_0) -> their table values.
K3_UNPACK_AVX2 inline void iq4_values(const uint8_t* qs, int8_t* q) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tensor::kIq4nlValues));
    store32(q, _mm256_shuffle_epi8(_mm256_set_m128i(table, table), nibbles_of_16(qs)));
}

struct Iq4nlFormat {
    using BlockType = tensor::BlockIq4nl;
    static constexpr int kBlockSize = 32, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        iq4_values(block.qs, u.q);
        u.scale[0] = tensor::load_f16(block.d);
    }
};

struct Iq4xsFormat {
    using BlockType = tensor::BlockIq4xs;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            iq4_values(block.qs + 16 * s, u.q + 32 * s);
            u.scale[s] = d * float(tensor::iq4xs_sub_scale(block, s));
        }
    }
};

// 32 levels: grid magnitudes (byte j of `magnitudes` is element j), negated where bit j of
// `signs` is set.
K3_UNPACK_AVX2 inline void signed_grid_32(__m256i magnitudes, uint32_t signs, int8_t* q) {
    const __m256i negate = bytes_of_bits(signs);
    store32(q, _mm256_sub_epi8(_mm256_xor_si256(magnitudes, negate), negate));
}
K3_UNPACK_AVX2 inline __m256i grid_points_4(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3) {
    return _mm256_setr_epi64x(int64_t(g0), int64_t(g1), int64_t(g2), int64_t(g3));
}
// The 32 sign bits of four IQ2/IQ3_XXS groups, from their 7-bit fields at bits 7g of `fields`.
inline uint32_t signs_of_7_bit_fields(uint32_t fields) {
    uint32_t signs = 0;
    for (int g = 0; g < 4; ++g) signs |= uint32_t(tensor::kIqSignsFrom7Bits[(fields >> (7 * g)) & 127]) << (8 * g);
    return signs;
}

// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: level = ±magnitude, scale per sub-block.
struct Iq2xxsFormat {
    using BlockType = tensor::BlockIq2xxs;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            const uint8_t* sub = block.qs + 8 * s;
            const uint32_t signs_scale = tensor::load_u32(sub + 4);
            const auto& grid = tensor::kIq2xxsGrid;
            signed_grid_32(grid_points_4(grid[sub[0]], grid[sub[1]], grid[sub[2]], grid[sub[3]]),
                           signs_of_7_bit_fields(signs_scale), u.q + 32 * s);
            u.scale[s] = tensor::iq_half_step_scale(d, signs_scale >> 28, 0.25f);
        }
    }
};

struct Iq2xsFormat {
    using BlockType = tensor::BlockIq2xs;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            uint64_t points[4];
            uint32_t fields = 0;
            for (int g = 0; g < 4; ++g) {
                const unsigned code = tensor::load_u16(block.qs + 8 * s + 2 * g);
                points[g] = tensor::kIq2xsGrid[code & 511];
                fields |= (code >> 9) << (7 * g);
            }
            signed_grid_32(grid_points_4(points[0], points[1], points[2], points[3]), signs_of_7_bit_fields(fields),
                           u.q + 32 * s);
        }
        for (int h = 0; h < 16; ++h) u.scale[h] = tensor::iq_half_step_scale(d, tensor::iq2_sub_scale(block.scales, h), 0.25f);
    }
};

struct Iq2sFormat {
    using BlockType = tensor::BlockIq2s;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            uint64_t points[4];
            for (int g = 0; g < 4; ++g)
                points[g] = tensor::kIq2sGrid[block.grid_low[4 * s + g] | ((block.qh[s] >> (2 * g)) & 3) << 8];
            signed_grid_32(grid_points_4(points[0], points[1], points[2], points[3]), tensor::load_u32(block.signs + 4 * s),
                           u.q + 32 * s);
        }
        for (int h = 0; h < 16; ++h) u.scale[h] = tensor::iq_half_step_scale(d, tensor::iq2_sub_scale(block.scales, h), 0.25f);
    }
};

struct Iq3xxsFormat {
    using BlockType = tensor::BlockIq3xxs;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            const uint8_t* k = block.qs + 8 * s;
            const auto& grid = tensor::kIq3xxsGrid;
            const __m256i magnitudes = _mm256_setr_epi32(int32_t(grid[k[0]]), int32_t(grid[k[1]]), int32_t(grid[k[2]]),
                                                         int32_t(grid[k[3]]), int32_t(grid[k[4]]), int32_t(grid[k[5]]),
                                                         int32_t(grid[k[6]]), int32_t(grid[k[7]]));
            const uint32_t signs_scale = tensor::load_u32(block.scales_signs + 4 * s);
            signed_grid_32(magnitudes, signs_of_7_bit_fields(signs_scale), u.q + 32 * s);
            u.scale[s] = tensor::iq_half_step_scale(d, signs_scale >> 28, 0.5f);
        }
    }
};

struct Iq3sFormat {
    using BlockType = tensor::BlockIq3s;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            int32_t points[8];
            for (int k = 0; k < 8; ++k)
                points[k] = int32_t(tensor::kIq3sGrid[block.qs[8 * s + k] | ((block.qh[s] >> k) & 1) << 8]);
            signed_grid_32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(points)),
                           tensor::load_u32(block.signs + 4 * s), u.q + 32 * s);
            u.scale[s] = d * float(1 + 2 * int((block.scales[s / 2] >> (4 * (s % 2))) & 15));
        }
    }
};

// IQ1_S, IQ1_M: x = dl·(g ± ⅛) with g in {−1, 0, 1} is stored as level 8g ± 1 times dl/8, the
// same product (dl/8 is exact), so the same rounding.
K3_UNPACK_AVX2 inline void iq1_levels_32(__m256i grid_points, __m256i delta_signs, int8_t* q) {
    const __m256i twice = _mm256_add_epi8(grid_points, grid_points);
    const __m256i four_times = _mm256_add_epi8(twice, twice);
    store32(q, _mm256_add_epi8(_mm256_add_epi8(four_times, four_times), _mm256_or_si256(delta_signs, _mm256_set1_epi8(1))));
}
// −1 in every byte when the δ sign bit is set, else 0 (or-ed with 1 above: −1 or +1).
inline uint64_t iq1_delta_sign(bool negative) { return negative ? ~uint64_t(0) : 0; }

struct Iq1sFormat {
    using BlockType = tensor::BlockIq1s;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            const unsigned qh = tensor::load_u16(block.qh + 2 * s);
            uint64_t points[4];
            for (int g = 0; g < 4; ++g) points[g] = tensor::kIq1sGrid[block.qs[4 * s + g] | ((qh >> (3 * g)) & 7) << 8];
            iq1_levels_32(grid_points_4(points[0], points[1], points[2], points[3]),
                          _mm256_set1_epi64x(int64_t(iq1_delta_sign(qh & 0x8000))), u.q + 32 * s);
            u.scale[s] = d * float(2 * ((qh >> 12) & 7) + 1) * 0.125f;
        }
    }
};

struct Iq1mFormat {
    using BlockType = tensor::BlockIq1m;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::iq1m_block_scale(block);
        for (int s = 0; s < 8; ++s) {
            uint64_t points[4], deltas[4];
            for (int g = 0; g < 4; ++g) {
                const unsigned qh = (block.qh[2 * s + g / 2] >> (4 * (g % 2))) & 15;
                points[g] = tensor::kIq1sGrid[block.qs[4 * s + g] | (qh & 7) << 8];
                deltas[g] = iq1_delta_sign(qh & 8);
            }
            iq1_levels_32(grid_points_4(points[0], points[1], points[2], points[3]),
                          grid_points_4(deltas[0], deltas[1], deltas[2], deltas[3]), u.q + 32 * s);
        }
        for (int h = 0; h < 16; ++h) u.scale[h] = d * float(2 * tensor::iq1m_sub_scale(block, h) + 1) * 0.125f;
    }
};

// TQ1_0, TQ2_0: level = trit − 1, one scale d for the block.
// Trit t of TQ1_0 bytes held in the low half of 16-bit lanes: (uint8(q·3^t)·3) >> 8.
K3_UNPACK_AVX2 inline __m256i tq1_trits_of_low_bytes(__m256i q, int16_t pow3) {
    const __m256i shifted = _mm256_and_si256(_mm256_mullo_epi16(q, _mm256_set1_epi16(pow3)), _mm256_set1_epi16(0xff));
    return _mm256_srli_epi16(_mm256_mullo_epi16(shifted, _mm256_set1_epi16(3)), 8);
}
// Trit t of 32 TQ1_0 bytes as levels (trit − 1), even and odd bytes apart.
K3_UNPACK_AVX2 inline __m256i tq1_levels(__m256i q, int t) {
    constexpr int16_t kPow3[5] = {1, 3, 9, 27, 81};
    const __m256i even = tq1_trits_of_low_bytes(_mm256_and_si256(q, _mm256_set1_epi16(0xff)), kPow3[t]);
    const __m256i odd = tq1_trits_of_low_bytes(_mm256_srli_epi16(q, 8), kPow3[t]);
    return _mm256_sub_epi8(_mm256_or_si256(even, _mm256_slli_epi16(odd, 8)), _mm256_set1_epi8(1));
}

struct Tq1Format {
    using BlockType = tensor::BlockTq1_0;
    static constexpr int kBlockSize = 256, kSubSize = 256;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const __m256i first = load32(block.qs);
        const __m256i rest = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs + 32)));
        for (int t = 0; t < 5; ++t) {
            store32(u.q + 32 * t, tq1_levels(first, t));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(u.q + 160 + 16 * t), _mm256_castsi256_si128(tq1_levels(rest, t)));
        }
        for (int t = 0; t < 4; ++t)
            for (int j = 0; j < 4; ++j) u.q[240 + 4 * t + j] = int8_t(tensor::tq1_trit(block.qh[j], t) - 1);
        u.scale[0] = tensor::load_f16(block.d);
    }
};

struct Tq2Format {
    using BlockType = tensor::BlockTq2_0;
    static constexpr int kBlockSize = 256, kSubSize = 256;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        unpack_two_bit(block.qs, u.q);  // the Q2_K layout
        for (int i = 0; i < 256; i += 32) store32(u.q + i, _mm256_sub_epi8(load32(u.q + i), _mm256_set1_epi8(1)));
        u.scale[0] = tensor::load_f16(block.d);
    }
};

// Calls f.template operator()<Format>() for the format of `type`; returns f's result, or
// `none` for a type without an unpacker.
template <typename Result, typename F>
Result with_format(tensor::Type type, Result none, F&& f) {
    using T = tensor::Type;
    using namespace tensor;
    switch (type) {
        case T::Q4_0: return f.template operator()<LegacyFormat<4, false, BlockQ4_0>>();
        case T::Q4_1: return f.template operator()<LegacyFormat<4, true, BlockQ4_1>>();
        case T::Q5_0: return f.template operator()<LegacyFormat<5, false, BlockQ5_0>>();
        case T::Q5_1: return f.template operator()<LegacyFormat<5, true, BlockQ5_1>>();
        case T::Q2_K: return f.template operator()<Q2KFormat>();
        case T::Q3_K: return f.template operator()<Q3KFormat>();
        case T::Q4_K: return f.template operator()<Q45KFormat<4, BlockQ4_K>>();
        case T::Q5_K: return f.template operator()<Q45KFormat<5, BlockQ5_K>>();
        case T::Q6_K: return f.template operator()<Q6KFormat>();
        case T::IQ4_NL: return f.template operator()<Iq4nlFormat>();
        case T::IQ4_XS: return f.template operator()<Iq4xsFormat>();
        case T::IQ2_XXS: return f.template operator()<Iq2xxsFormat>();
        case T::IQ2_XS: return f.template operator()<Iq2xsFormat>();
        case T::IQ2_S: return f.template operator()<Iq2sFormat>();
        case T::IQ3_XXS: return f.template operator()<Iq3xxsFormat>();
        case T::IQ3_S: return f.template operator()<Iq3sFormat>();
        case T::IQ1_S: return f.template operator()<Iq1sFormat>();
        case T::IQ1_M: return f.template operator()<Iq1mFormat>();
        case T::TQ1_0: return f.template operator()<Tq1Format>();
        case T::TQ2_0: return f.template operator()<Tq2Format>();
        default: return none;
    }
}

}  // namespace k3::kernels::unpack
