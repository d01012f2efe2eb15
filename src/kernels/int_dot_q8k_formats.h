// The 256-value formats whose × Q8_K kernels are fused (int_dot.h, "× Q8_K, fused"), described
// once in plain integers for the scalar reference: per block the levels, the integer scale of
// each 16-value slot, for the offset formats the integer min of each slot, and the two f32
// factors (x = d·sc·level − dmin·m), each an f16 times kDFactor (exact: a power of two). The
// SIMD kernels (int_dot_q8k_fused_simd.h) decode the same block in registers and must give the
// same integers.
#pragma once

#include <cstdint>

#include "tensor/block_iq4.h"
#include "tensor/block_iq_grid.h"
#include "tensor/block_kquants.h"
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

// Calls f.template operator()<Format>() for a fused format; `none` for other types.
template <typename Result, typename F>
Result with_fused_format(tensor::Type type, Result none, F&& f) {
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
        default: return none;
    }
}

}  // namespace k3::kernels::q8k_formats
