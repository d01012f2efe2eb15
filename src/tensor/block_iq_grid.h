// ggml's codebook formats IQ1_S…IQ3_S (k3-architecture.md §9): blocks of 256 values in groups of
// 8 (IQ1, IQ2) or 4 (IQ3) whose magnitudes are one point of a fixed grid (iq_grids.h), with
// signs, a sub-block scale and an f16 block scale d. Fields are byte arrays, multi-byte fields
// little endian. In every format the groups follow each other in element order.
#pragma once

#include <cstdint>

#include "tensor/quant_bytes.h"

namespace k3::tensor {

inline constexpr int kIqGridBlockSize = 256;

// Sub-block s (32 values) is qs[8s .. 8s+7]: 4 grid indices (kIq2xxsGrid), then a u32 holding the
// 7-bit signs of group g in bits 7g.. and the scale ls in bits 28..31; x = d·(ls + ½)/4·g.
struct BlockIq2xxs {
    uint8_t d[2];  // f16
    uint8_t qs[64];
};
// Group g is u16 qs[2g]: grid index (kIq2xsGrid) in bits 0..8, 7-bit signs in bits 9..15.
// Sub-block s has two scales, nibbles of scales[s] (low: groups 4s, 4s+1); x = d·(ls + ½)/4·g.
struct BlockIq2xs {
    uint8_t d[2];  // f16
    uint8_t qs[64];
    uint8_t scales[8];
};
// Group g: grid index (kIq2sGrid) grid_low[g] | bits 2(g%4).. of qh[g/4] << 8; all 8 sign bits
// in signs[g]; scales as IQ2_XS.
struct BlockIq2s {
    uint8_t d[2];  // f16
    uint8_t grid_low[32];
    uint8_t signs[32];
    uint8_t qh[8];
    uint8_t scales[8];
};
// Group k of 4 (0..63) has grid index qs[k] (kIq3xxsGrid); sub-block s has a u32 at
// scales_signs[4s]: 7-bit signs of its 8-value pair p in bits 7p.., scale ls in bits 28..31;
// x = d·(ls + ½)/2·g.
struct BlockIq3xxs {
    uint8_t d[2];  // f16
    uint8_t qs[64];
    uint8_t scales_signs[32];
};
// Group k of 4 has grid index (kIq3sGrid) qs[k] | bit k%8 of qh[k/8] << 8, the sign bits of its
// 8-value pair in signs[k/2] (all 8 stored); sub-block s has scale nibble s%2 of scales[s/2];
// x = d·(2·ls + 1)·g.
struct BlockIq3s {
    uint8_t d[2];  // f16
    uint8_t qs[64];
    uint8_t qh[8];
    uint8_t signs[32];
    uint8_t scales[4];
};
// Group g has grid index (kIq1sGrid) qs[g] | bits 3(g%4).. of u16 qh[g/4] << 8; that u16 also
// holds the sub-block's scale ls in bits 12..14 and the sign of δ in bit 15; x = d·(2·ls + 1)·(g ± δ).
struct BlockIq1s {
    uint8_t d[2];  // f16
    uint8_t qs[32];
    uint8_t qh[16];
};
// Group g has grid index qs[g] | (nibble g%2 of qh[g/2]) & 7 << 8, and bit 3 of that nibble is
// the sign of δ. The four u16 of scales hold 3-bit scales (sub-block s: bits 6(s%2).. for its
// first 16 values, 6(s%2)+3.. for the last 16, of u16 s/2) and, in their top nibbles, the f16 d.
struct BlockIq1m {
    uint8_t qs[32];
    uint8_t qh[16];
    uint8_t scales[8];
};
static_assert(sizeof(BlockIq2xxs) == 66 && sizeof(BlockIq2xs) == 74 && sizeof(BlockIq2s) == 82);
static_assert(sizeof(BlockIq3xxs) == 98 && sizeof(BlockIq3s) == 110);
static_assert(sizeof(BlockIq1s) == 50 && sizeof(BlockIq1m) == 56);

// The IQ2 sub-block scale d·(ls + ½)/4 (step ¼) and IQ3_XXS's d·(ls + ½)/2 (step ½), rounded as
// ggml rounds them.
inline float iq_half_step_scale(float d, unsigned ls, float step) { return d * (0.5f + float(ls)) * step; }

// The 4-bit scale of IQ2_XS/IQ2_S values 16h .. 16h + 15.
inline unsigned iq2_sub_scale(const uint8_t* scales, int h) { return (scales[h / 2] >> (4 * (h % 2))) & 15; }

// IQ1_M's f16 block scale d, from the top nibbles of its four scale words.
inline float iq1m_block_scale(const BlockIq1m& block) {
    uint16_t bits = 0;
    for (int i = 0; i < 4; ++i) bits |= uint16_t((load_u16(block.scales + 2 * i) >> 12) << (4 * i));
    return f16_to_f32(bits);
}
// IQ1_M's 3-bit scale of values 16h .. 16h + 15.
inline unsigned iq1m_sub_scale(const BlockIq1m& block, int h) {
    return (load_u16(block.scales + 2 * (h / 4)) >> (3 * (h % 4))) & 7;
}

// Row functions (n elements, a multiple of 256).
void dequantize_row_iq2_xxs(const void* blocks, float* out, int64_t n);
void dequantize_row_iq2_xs(const void* blocks, float* out, int64_t n);
void dequantize_row_iq2_s(const void* blocks, float* out, int64_t n);
void dequantize_row_iq3_xxs(const void* blocks, float* out, int64_t n);
void dequantize_row_iq3_s(const void* blocks, float* out, int64_t n);
void dequantize_row_iq1_s(const void* blocks, float* out, int64_t n);
void dequantize_row_iq1_m(const void* blocks, float* out, int64_t n);

// The quantisers are ggml's searches (llama-quantize's bytes). importance: one weight per element
// of the row (an imatrix column); IQ2_XXS, IQ2_XS and IQ1_S throw without it, the others then
// weigh values as ggml does without one.
void quantize_row_iq2_xxs(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_iq2_xs(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_iq2_s(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_iq3_xxs(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_iq3_s(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_iq1_s(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_iq1_m(const float* in, void* blocks, int64_t n, const float* importance);

}  // namespace k3::tensor
