// ggml's original 32-element block formats (k3-architecture.md §9), bit-compatible with GGUF.
// Element j of a block sits in the low nibble of qs[j] for j < 16, in the high nibble of
// qs[j-16] otherwise. Q5 types keep the fifth bit of element j in bit j of the u32 qh.
// Fields are byte arrays (alignment 1), multi-byte fields little endian.
#pragma once

#include <cstdint>

namespace k3::tensor {

inline constexpr int kLegacyBlockSize = 32;

struct BlockQ4_0 {      // x = d·(q − 8)
    uint8_t d[2];       // f16
    uint8_t qs[16];
};
struct BlockQ4_1 {      // x = d·q + m
    uint8_t d[2], m[2]; // f16
    uint8_t qs[16];
};
struct BlockQ5_0 {      // x = d·(q − 16)
    uint8_t d[2];       // f16
    uint8_t qh[4];      // u32: bit j = fifth bit of element j
    uint8_t qs[16];
};
struct BlockQ5_1 {      // x = d·q + m
    uint8_t d[2], m[2]; // f16
    uint8_t qh[4];
    uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);

// Row functions (n elements, a multiple of 32); signatures of tensor::DequantizeRow/QuantizeRow.
// The quantizers are ggml's quantize_row_*_ref: d from the signed absolute maximum (_0) or from
// max − min (_1), levels by truncating x/d + offset + 0.5.
void dequantize_row_q4_0(const void* blocks, float* out, int64_t n);
void dequantize_row_q4_1(const void* blocks, float* out, int64_t n);
void dequantize_row_q5_0(const void* blocks, float* out, int64_t n);
void dequantize_row_q5_1(const void* blocks, float* out, int64_t n);
void quantize_row_q4_0(const float* in, void* blocks, int64_t n);
void quantize_row_q4_1(const float* in, void* blocks, int64_t n);
void quantize_row_q5_0(const float* in, void* blocks, int64_t n);
void quantize_row_q5_1(const float* in, void* blocks, int64_t n);

}  // namespace k3::tensor
