// ggml's "K" formats: super-blocks of 256 elements with integer sub-block scales multiplied by
// an f16 super-block scale (k3-architecture.md §9). Fields are byte arrays (alignment 1),
// multi-byte fields little endian.
#pragma once

#include <cstdint>

namespace k3::tensor {

inline constexpr int kSuperBlockSize = 256;

// 16 sub-blocks of 16; x = d·(scales & 15)·q − dmin·(scales >> 4), q 2-bit.
// qs byte 32h + l holds, in bits 2s..2s+1, element 128h + 32s + l (l < 32).
struct BlockQ2_K {
    uint8_t scales[16];
    uint8_t qs[64];
    uint8_t d[2], dmin[2];  // f16
};
// 16 sub-blocks of 16, signed 6-bit scales (packed in 12 bytes, stored +32); x = d·(s − 32)·(q − 4)
// with q = 2 bits as in Q2_K plus a high bit: element j uses bit j / 32 of hmask[j % 32].
struct BlockQ3_K {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12];
    uint8_t d[2];  // f16
};
// 8 sub-blocks of 32 with 6-bit scale sc and min m (packed in 12 bytes); x = d·sc·q − dmin·m.
// qs byte 32c + l: element 64c + l in the low nibble, 64c + 32 + l in the high nibble.
struct BlockQ4_K {
    uint8_t d[2], dmin[2];  // f16
    uint8_t scales[12];
    uint8_t qs[128];
};
// As Q4_K with a fifth bit: element 64c + l in bit 2c of qh[l], 64c + 32 + l in bit 2c + 1.
struct BlockQ5_K {
    uint8_t d[2], dmin[2];  // f16
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
};
// 16 sub-blocks of 16 with int8 scales; x = d·scale·(q − 32), q 6-bit (4 in ql, 2 in qh).
struct BlockQ6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint8_t d[2];  // f16
};
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// Sub-block k (0..7) scale and min of Q4_K/Q5_K: k < 4: scales[k] & 63, scales[k+4] & 63;
// else low 4 bits from scales[k+4] (scale low nibble, min high nibble), high 2 bits from the
// top bits of scales[k−4] (scale) and scales[k] (min).
struct ScaleMin {
    uint8_t scale, min;
};
inline ScaleMin unpack_scale_min_k4(const uint8_t* scales, int k) {
    if (k < 4) return {uint8_t(scales[k] & 63), uint8_t(scales[k + 4] & 63)};
    return {uint8_t((scales[k + 4] & 15) | (scales[k - 4] >> 6) << 4),
            uint8_t((scales[k + 4] >> 4) | (scales[k] >> 6) << 4)};
}

// Sub-block k (0..15) signed scale of Q3_K (the stored 6-bit value minus 32).
inline int unpack_scale_q3_k(const uint8_t* scales, int k) {
    const int low = (scales[k % 8] >> (4 * (k / 8))) & 15;
    const int high = (scales[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (low | high << 4) - 32;
}

// Row functions (n elements, a multiple of 256). Quantizers are ggml's quantize_row_*_ref
// (what llama-quantize runs without an importance matrix).
void dequantize_row_q2_k(const void* blocks, float* out, int64_t n);
void dequantize_row_q3_k(const void* blocks, float* out, int64_t n);
void dequantize_row_q4_k(const void* blocks, float* out, int64_t n);
void dequantize_row_q5_k(const void* blocks, float* out, int64_t n);
void dequantize_row_q6_k(const void* blocks, float* out, int64_t n);
void quantize_row_q2_k(const float* in, void* blocks, int64_t n);
void quantize_row_q3_k(const float* in, void* blocks, int64_t n);
void quantize_row_q4_k(const float* in, void* blocks, int64_t n);
void quantize_row_q5_k(const float* in, void* blocks, int64_t n);
void quantize_row_q6_k(const float* in, void* blocks, int64_t n);
// With importance weights (one per element of the row), as ggml's quantize_q*_K with an
// imatrix (quantize_row_q*_K_impl).
void quantize_row_q2_k_weighted(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_q3_k_weighted(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_q4_k_weighted(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_q5_k_weighted(const float* in, void* blocks, int64_t n, const float* importance);
void quantize_row_q6_k_weighted(const float* in, void* blocks, int64_t n, const float* importance);

}  // namespace k3::tensor
