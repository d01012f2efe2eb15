#include "tensor/block_legacy.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "tensor/no_fp_contract.h"
#include "tensor/quant_bytes.h"
#include "tensor/quant_search.h"

namespace k3::tensor {
namespace {

// Level of element j of a block: its nibble, plus the fifth bit from qh for 5-bit formats.
template <int Bits>
int level_at(const uint8_t* qs, uint32_t qh, int j) {
    const int nibble = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
    if constexpr (Bits == 5) return nibble | int((qh >> j) & 1) << 4;
    return nibble;
}

// Writes 32 levels: nibbles into qs and, for 5-bit formats, fifth bits into *qh.
template <int Bits>
void pack_levels(const uint8_t* levels, uint8_t* qs, uint32_t* qh) {
    for (int j = 0; j < 16; ++j) qs[j] = uint8_t((levels[j] & 15) | (levels[j + 16] & 15) << 4);
    if constexpr (Bits == 5) {
        *qh = 0;
        for (int j = 0; j < 32; ++j) *qh |= uint32_t(levels[j] >> 4 & 1) << j;
    }
}

// ggml's level for a scaled value v: (int8_t)(v + offset) as x86 truncates it, capped at nmax.
// (Q5_1 casts to uint8_t without the cap; for every reachable v, including the inf/NaN that a
// subnormal block produces, both give the same level.)
uint8_t level_of(float v, float offset, int nmax) {
    return uint8_t(std::min(nmax, int(int8_t(truncate_like_x86(v + offset)))));
}

// Q4_0/Q5_0: x = d·(q − 2^(Bits−1)); d = max / −2^(Bits−1) where max is the signed value of
// largest magnitude, so that value maps to level 0 exactly.
template <int Bits, typename Block>
void dequantize_symmetric(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const Block*>(blocks);
    for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, ++block, out += kLegacyBlockSize) {
        const float d = load_f16(block->d);
        uint32_t qh = 0;
        if constexpr (Bits == 5) qh = load_u32(block->qh);
        for (int j = 0; j < 32; ++j) out[j] = float(level_at<Bits>(block->qs, qh, j) - (1 << (Bits - 1))) * d;
    }
}

template <int Bits, typename Block>
void quantize_symmetric(const float* in, void* blocks, int64_t n) {
    constexpr int kHalf = 1 << (Bits - 1);
    auto* block = static_cast<Block*>(blocks);
    for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, ++block, in += kLegacyBlockSize) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j) {
            if (amax < std::fabs(in[j])) {
                amax = std::fabs(in[j]);
                max = in[j];
            }
        }
        const float d = max / -kHalf;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        store_f16(block->d, d);
        uint8_t levels[32];
        for (int j = 0; j < 32; ++j) levels[j] = level_of(in[j] * id, float(kHalf) + 0.5f, 2 * kHalf - 1);
        uint32_t qh = 0;
        pack_levels<Bits>(levels, block->qs, &qh);
        if constexpr (Bits == 5) store_u32(block->qh, qh);
    }
}

// Q4_1/Q5_1: x = d·q + m; m = min, d = (max − min) / (2^Bits − 1).
template <int Bits, typename Block>
void dequantize_offset(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const Block*>(blocks);
    for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, ++block, out += kLegacyBlockSize) {
        const float d = load_f16(block->d);
        const float m = load_f16(block->m);
        uint32_t qh = 0;
        if constexpr (Bits == 5) qh = load_u32(block->qh);
        for (int j = 0; j < 32; ++j) out[j] = float(level_at<Bits>(block->qs, qh, j)) * d + m;
    }
}

template <int Bits, typename Block>
void quantize_offset(const float* in, void* blocks, int64_t n) {
    constexpr int kMaxLevel = (1 << Bits) - 1;
    auto* block = static_cast<Block*>(blocks);
    for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, ++block, in += kLegacyBlockSize) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < 32; ++j) {
            if (in[j] < min) min = in[j];
            if (in[j] > max) max = in[j];
        }
        const float d = (max - min) / kMaxLevel;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        store_f16(block->d, d);
        store_f16(block->m, min);
        uint8_t levels[32];
        for (int j = 0; j < 32; ++j) levels[j] = level_of((in[j] - min) * id, 0.5f, kMaxLevel);
        uint32_t qh = 0;
        pack_levels<Bits>(levels, block->qs, &qh);
        if constexpr (Bits == 5) store_u32(block->qh, qh);
    }
}

}  // namespace

void dequantize_row_q4_0(const void* blocks, float* out, int64_t n) { dequantize_symmetric<4, BlockQ4_0>(blocks, out, n); }
void dequantize_row_q5_0(const void* blocks, float* out, int64_t n) { dequantize_symmetric<5, BlockQ5_0>(blocks, out, n); }
void dequantize_row_q4_1(const void* blocks, float* out, int64_t n) { dequantize_offset<4, BlockQ4_1>(blocks, out, n); }
void dequantize_row_q5_1(const void* blocks, float* out, int64_t n) { dequantize_offset<5, BlockQ5_1>(blocks, out, n); }
void quantize_row_q4_0(const float* in, void* blocks, int64_t n) { quantize_symmetric<4, BlockQ4_0>(in, blocks, n); }
void quantize_row_q5_0(const float* in, void* blocks, int64_t n) { quantize_symmetric<5, BlockQ5_0>(in, blocks, n); }
void quantize_row_q4_1(const float* in, void* blocks, int64_t n) { quantize_offset<4, BlockQ4_1>(in, blocks, n); }
void quantize_row_q5_1(const float* in, void* blocks, int64_t n) { quantize_offset<5, BlockQ5_1>(in, blocks, n); }

}  // namespace k3::tensor
