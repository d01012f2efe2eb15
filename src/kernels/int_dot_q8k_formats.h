// The 256-value formats of the × Q8_K kernels (int_dot.h, "× Q8_K"), described once in plain
// integers for the scalar reference: per block the levels, the integer scale of
// each 16-value slot, for the offset formats the integer min of each slot, and the two f32
// factors (x = d·sc·level − dmin·m), each an f16 times kDFactor (exact: a power of two). The
// SIMD kernels (int_dot_q8k_simd.h) decode the same block in registers and must give the
// same integers.
#pragma once

#include <cstdint>

#include "tensor/block_iq4.h"
#include "tensor/block_iq_grid.h"
#include "tensor/block_kquants.h"
#include "tensor/block_ternary.h"
#include "tensor/float_formats.h"
#include "tensor/iq_grids.h"
#include "tensor/quant_bytes.h"
#include "tensor/tensor_type.h"

namespace k3::kernels::q8k_formats {

// Each format: BlockType, kOffset, kDFactor, levels(block, q), slot_scales(block, sc),
// slot_mins(block, m) (offset formats only), d_bits(block), dmin_bits(block) (offset formats
// only): the f16 bits of d and dmin.

struct Q2K {
    using BlockType = tensor::BlockQ2_K;
    static constexpr bool kOffset = true;
    static constexpr float kDFactor = 1.0f;
    // Element 128h + 32s + l: bits 2s..2s+1 of qs[32h + l].
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) q[i] = int8_t((b.qs[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3);
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = b.scales[j] & 15;
    }
    static void slot_mins(const BlockType& b, int* m) {
        for (int j = 0; j < 16; ++j) m[j] = b.scales[j] >> 4;
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
    static uint16_t dmin_bits(const BlockType& b) { return tensor::load_u16(b.dmin); }
};

struct Q3K {
    using BlockType = tensor::BlockQ3_K;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 1.0f;
    // Q2_K's two bits, minus 4 unless bit i/32 of hmask[i%32] is set.
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int low = (b.qs[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3;
            q[i] = int8_t(low - ((b.hmask[i % 32] >> (i / 32)) & 1 ? 0 : 4));
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = tensor::unpack_scale_q3_k(b.scales, j);
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// Q4_K, Q5_K: element 64c + l in the low nibble of qs[32c + l], 64c + 32 + l in its high nibble;
// Q5_K's fifth bit of element i is bit i/32 of qh[i%32]. Sub-blocks of 32.
template <int Bits, typename Block>
struct Q45K {
    using BlockType = Block;
    static constexpr bool kOffset = true;
    static constexpr float kDFactor = 1.0f;
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            int v = (b.qs[32 * (i / 64) + i % 32] >> (4 * (i / 32 % 2))) & 15;
            if constexpr (Bits == 5) v |= ((b.qh[i % 32] >> (i / 32)) & 1) << 4;
            q[i] = int8_t(v);
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = tensor::unpack_scale_min_k4(b.scales, j / 2).scale;
    }
    static void slot_mins(const BlockType& b, int* m) {
        for (int j = 0; j < 16; ++j) m[j] = tensor::unpack_scale_min_k4(b.scales, j / 2).min;
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
    static uint16_t dmin_bits(const BlockType& b) { return tensor::load_u16(b.dmin); }
};
using Q4K = Q45K<4, tensor::BlockQ4_K>;
using Q5K = Q45K<5, tensor::BlockQ5_K>;

struct Q6K {
    using BlockType = tensor::BlockQ6_K;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 1.0f;
    // Element 128h + 32g + l: 4 low bits from ql[64h + 32(g%2) + l] (high nibble for g >= 2),
    // 2 high bits from bits 2g..2g+1 of qh[32h + l]; minus 32.
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int h = i / 128, g = i / 32 % 4, l = i % 32;
            const int low = (b.ql[64 * h + 32 * (g % 2) + l] >> (4 * (g / 2))) & 15;
            const int high = (b.qh[32 * h + l] >> (2 * g)) & 3;
            q[i] = int8_t((low | high << 4) - 32);
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = b.scales[j];
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

struct Iq4xs {
    using BlockType = tensor::BlockIq4xs;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 1.0f;
    // Sub-block s: element 32s + l (l < 16) from the low nibble of qs[16s + l], 32s + 16 + l from its high nibble.
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) q[i] = tensor::kIq4nlValues[(b.qs[16 * (i / 32) + i % 16] >> (4 * (i / 16 % 2))) & 15];
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = tensor::iq4xs_sub_scale(b, j / 2);
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// x = d·(ls + ½)/4·g = (d/8)·(2ls + 1)·g: slot scales 2ls + 1, d times ⅛.
struct Iq2xxs {
    using BlockType = tensor::BlockIq2xxs;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 0.125f;
    // Element 32s + 8g + e: byte e of grid point qs[8s + g], negative where bit e of group g's signs is set.
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int s = i / 32, g = i / 8 % 4, e = i % 8;
            const uint32_t signs_scale = tensor::load_u32(b.qs + 8 * s + 4);
            const int magnitude = int(tensor::kIq2xxsGrid[b.qs[8 * s + g]] >> (8 * e) & 255);
            const bool negative = tensor::kIqSignsFrom7Bits[(signs_scale >> (7 * g)) & 127] >> e & 1;
            q[i] = int8_t(negative ? -magnitude : magnitude);
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = int(2 * (tensor::load_u32(b.qs + 8 * (j / 2) + 4) >> 28) + 1);
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// x = d·(2ls + 1)·(g ± ⅛) = (d/8)·(2ls + 1)·(8g ± 1): levels 8g ± 1, slot scales 2ls + 1, d times ⅛.
struct Iq1m {
    using BlockType = tensor::BlockIq1m;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 0.125f;
    // Group g (element 8g + e): grid point qs[g] | (nibble g%2 of qh[g/2] & 7) << 8, δ negative where bit 3 of that nibble is set.
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int g = i / 8, e = i % 8;
            const unsigned nibble = (b.qh[g / 2] >> (4 * (g % 2))) & 15;
            const auto grid_value = int8_t(tensor::kIq1sGrid[b.qs[g] | (nibble & 7) << 8] >> (8 * e) & 255);
            q[i] = int8_t(8 * grid_value + (nibble & 8 ? -1 : 1));
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = int(2 * tensor::iq1m_sub_scale(b, j) + 1);
    }
    // The f16 d from the top nibbles of the four scale words.
    static uint16_t d_bits(const BlockType& b) {
        uint16_t bits = 0;
        for (int i = 0; i < 4; ++i) bits |= uint16_t((tensor::load_u16(b.scales + 2 * i) >> 12) << (4 * i));
        return bits;
    }
};

// x = d·(2ls + 1)·(g ± ⅛) per sub-block of 32, as IQ1_M with one scale and δ sign per sub-block.
struct Iq1s {
    using BlockType = tensor::BlockIq1s;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 0.125f;
    // Group g (element 8g + e) of sub-block s = g/4: grid point qs[g] | bits 3(g%4).. of u16 qh[s] << 8.
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int g = i / 8, e = i % 8;
            const unsigned qh = tensor::load_u16(b.qh + 2 * (g / 4));
            const auto grid_value = int8_t(tensor::kIq1sGrid[b.qs[g] | ((qh >> (3 * (g % 4))) & 7) << 8] >> (8 * e) & 255);
            q[i] = int8_t(8 * grid_value + (qh & 0x8000 ? -1 : 1));
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = int(2 * ((tensor::load_u16(b.qh + 2 * (j / 2)) >> 12) & 7) + 1);
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// IQ2_XS, IQ2_S: x = d·(ls + ½)/4·g with a 4-bit ls per 16 values: slot scales 2ls + 1, d times ⅛.
// Element 8g + e: byte e of group g's grid point, negative where bit e of its sign byte is set.
template <typename Block>
void iq2_slot_scales(const Block& b, int* sc) {
    for (int j = 0; j < 16; ++j) sc[j] = int(2 * tensor::iq2_sub_scale(b.scales, j) + 1);
}
inline int8_t signed_grid_value(uint64_t point, unsigned sign_byte, int e) {
    const int magnitude = int(point >> (8 * e) & 255);
    return int8_t(sign_byte >> e & 1 ? -magnitude : magnitude);
}

struct Iq2xs {
    using BlockType = tensor::BlockIq2xs;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 0.125f;
    // Group g is u16 qs[2g]: grid index in bits 0..8, 7-bit signs in bits 9..15.
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const unsigned code = tensor::load_u16(b.qs + 2 * (i / 8));
            q[i] = signed_grid_value(tensor::kIq2xsGrid[code & 511], tensor::kIqSignsFrom7Bits[code >> 9], i % 8);
        }
    }
    static void slot_scales(const BlockType& b, int* sc) { iq2_slot_scales(b, sc); }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

struct Iq2s {
    using BlockType = tensor::BlockIq2s;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 0.125f;
    // Group g: grid index grid_low[g] | bits 2(g%4).. of qh[g/4] << 8; sign byte signs[g].
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int g = i / 8;
            q[i] = signed_grid_value(tensor::kIq2sGrid[b.grid_low[g] | ((b.qh[g / 4] >> (2 * (g % 4))) & 3) << 8], b.signs[g], i % 8);
        }
    }
    static void slot_scales(const BlockType& b, int* sc) { iq2_slot_scales(b, sc); }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// x = d·(ls + ½)/2·g = (d/4)·(2ls + 1)·g per sub-block of 32.
struct Iq3xxs {
    using BlockType = tensor::BlockIq3xxs;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 0.25f;
    // Element 4k + e: byte e of grid point qs[k]; the signs of pair p = k/2 (of sub-block s = k/8)
    // are the 7-bit field p%4 of u32 scales_signs[4s].
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int k = i / 4, s = i / 32, p = i / 8 % 4;
            const uint32_t signs_scale = tensor::load_u32(b.scales_signs + 4 * s);
            const int magnitude = int(tensor::kIq3xxsGrid[b.qs[k]] >> (8 * (i % 4)) & 255);
            q[i] = int8_t(tensor::kIqSignsFrom7Bits[(signs_scale >> (7 * p)) & 127] >> (i % 8) & 1 ? -magnitude : magnitude);
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = int(2 * (tensor::load_u32(b.scales_signs + 4 * (j / 2)) >> 28) + 1);
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// x = d·(2ls + 1)·g per sub-block of 32.
struct Iq3s {
    using BlockType = tensor::BlockIq3s;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 1.0f;
    // Element 4k + e: byte e of grid point qs[k] | bit k%8 of qh[k/8] << 8; sign bit i%8 of signs[i/8].
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) {
            const int k = i / 4;
            const uint32_t point = tensor::kIq3sGrid[b.qs[k] | ((b.qh[k / 8] >> (k % 8)) & 1) << 8];
            const int magnitude = int(point >> (8 * (i % 4)) & 255);
            q[i] = int8_t(b.signs[i / 8] >> (i % 8) & 1 ? -magnitude : magnitude);
        }
    }
    static void slot_scales(const BlockType& b, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = int(2 * ((b.scales[j / 4] >> (4 * (j / 2 % 2))) & 15) + 1);
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// TQ1_0, TQ2_0: x = d·(trit − 1), one scale for the block.
struct Tq1 {
    using BlockType = tensor::BlockTq1_0;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 1.0f;
    // Trit t of qs[l] (l < 32) is element 32t + l, of qs[32 + l] element 160 + 16t + l, of qh[j] element 240 + 4t + j.
    static void levels(const BlockType& b, int8_t* q) {
        for (int t = 0; t < 5; ++t) {
            for (int l = 0; l < 32; ++l) q[32 * t + l] = int8_t(tensor::tq1_trit(b.qs[l], t) - 1);
            for (int l = 0; l < 16; ++l) q[160 + 16 * t + l] = int8_t(tensor::tq1_trit(b.qs[32 + l], t) - 1);
        }
        for (int t = 0; t < 4; ++t)
            for (int j = 0; j < 4; ++j) q[240 + 4 * t + j] = int8_t(tensor::tq1_trit(b.qh[j], t) - 1);
    }
    static void slot_scales(const BlockType&, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = 1;
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

struct Tq2 {
    using BlockType = tensor::BlockTq2_0;
    static constexpr bool kOffset = false;
    static constexpr float kDFactor = 1.0f;
    // Q2_K's layout: element 128h + 32s + l in bits 2s..2s+1 of qs[32h + l].
    static void levels(const BlockType& b, int8_t* q) {
        for (int i = 0; i < 256; ++i) q[i] = int8_t(((b.qs[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3) - 1);
    }
    static void slot_scales(const BlockType&, int* sc) {
        for (int j = 0; j < 16; ++j) sc[j] = 1;
    }
    static uint16_t d_bits(const BlockType& b) { return tensor::load_u16(b.d); }
};

// d or dmin of a block: its f16 bits times the format's kDFactor.
template <typename Format>
float weight_factor(uint16_t f16_bits) {
    const float value = tensor::f16_to_f32(f16_bits);
    if constexpr (Format::kDFactor != 1.0f) return value * Format::kDFactor;
    return value;
}

// Calls f.template operator()<Format>() for the format of `type`; `none` for other types.
template <typename Result, typename F>
Result with_format(tensor::Type type, Result none, F&& f) {
    using T = tensor::Type;
    switch (type) {
        case T::Q2_K: return f.template operator()<Q2K>();
        case T::Q3_K: return f.template operator()<Q3K>();
        case T::Q4_K: return f.template operator()<Q4K>();
        case T::Q5_K: return f.template operator()<Q5K>();
        case T::Q6_K: return f.template operator()<Q6K>();
        case T::IQ4_XS: return f.template operator()<Iq4xs>();
        case T::IQ2_XXS: return f.template operator()<Iq2xxs>();
        case T::IQ1_M: return f.template operator()<Iq1m>();
        case T::IQ1_S: return f.template operator()<Iq1s>();
        case T::IQ2_XS: return f.template operator()<Iq2xs>();
        case T::IQ2_S: return f.template operator()<Iq2s>();
        case T::IQ3_XXS: return f.template operator()<Iq3xxs>();
        case T::IQ3_S: return f.template operator()<Iq3s>();
        case T::TQ1_0: return f.template operator()<Tq1>();
        case T::TQ2_0: return f.template operator()<Tq2>();
        default: return none;
    }
}

}  // namespace k3::kernels::q8k_formats
