// ggml's 4-bit non-linear formats (k3-architecture.md §9): each 4-bit code indexes a fixed
// table of 16 int8 levels, times a block scale. Nibble layout within 32 elements as Q4_0.
#pragma once

#include <cstdint>

namespace k3::tensor {

// kvalues_iq4nl: denser near zero, where weights are.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

inline constexpr int kIq4nlBlockSize = 32;
struct BlockIq4nl {   // x = d·T[code]
    uint8_t d[2];     // f16
    uint8_t qs[16];
};
inline constexpr int kIq4xsBlockSize = 256;
// Eight sub-blocks of 32 with 6-bit scales ls (stored +32); x = d·(ls − 32)·T[code].
// ls of sub-block b: low 4 bits = nibble b%2 of scales_l[b/2], high 2 bits = bits 2b..2b+1 of scales_h.
struct BlockIq4xs {
    uint8_t d[2];         // f16
    uint8_t scales_h[2];  // u16
    uint8_t scales_l[4];
    uint8_t qs[128];      // sub-block b: qs[16b .. 16b+15]
};
static_assert(sizeof(BlockIq4nl) == 18 && sizeof(BlockIq4xs) == 136);

inline int iq4xs_sub_scale(const BlockIq4xs& block, int sub) {
    const unsigned scales_h = unsigned(block.scales_h[0]) | unsigned(block.scales_h[1]) << 8;
    return int(((block.scales_l[sub / 2] >> (4 * (sub % 2))) & 15) | ((scales_h >> (2 * sub)) & 3) << 4) - 32;
}

// Row functions. The quantizers are what llama-quantize runs without an importance matrix
// (ggml_quantize_chunk -> quantize_iq4_nl / quantize_iq4_xs with weights x², 15 scale trials).
void dequantize_row_iq4_nl(const void* blocks, float* out, int64_t n);
void dequantize_row_iq4_xs(const void* blocks, float* out, int64_t n);
void quantize_row_iq4_nl(const float* in, void* blocks, int64_t n);
void quantize_row_iq4_xs(const float* in, void* blocks, int64_t n);
// With importance weights (one per element of the row; null: as above).
void quantize_row_iq4_nl_weighted(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_iq4_xs_weighted(const float* in, void* blocks, int64_t n, const float* importance);

}  // namespace k3::tensor
