// ggml's ternary formats TQ1_0 and TQ2_0 (k3-architecture.md §9): 256 values in {−1, 0, 1}
// times an f16 block scale d.
#pragma once

#include <cstdint>

namespace k3::tensor {

inline constexpr int kTernaryBlockSize = 256;

// Five values per byte: the base-3 number q of their trits (value + 1) stored as ⌈256·q/243⌉,
// so that trit n reads back as (uint8(byte·3^n)·3) >> 8. Trit n of qs[m] is element 32n + m for
// m < 32, then 160 + 16n + (m − 32) for m < 48; trit n (< 4) of qh[j] is element 240 + 4n + j.
struct BlockTq1_0 {
    uint8_t qs[48];
    uint8_t qh[4];
    uint8_t d[2];  // f16
};
// Two bits per value, stored + 1: bits 2l.. of qs[32h + m] are element 128h + 32l + m.
struct BlockTq2_0 {
    uint8_t qs[64];
    uint8_t d[2];  // f16
};
static_assert(sizeof(BlockTq1_0) == 54 && sizeof(BlockTq2_0) == 66);

// Trit n (0..4) of a TQ1_0 byte, as 0, 1, 2 (value + 1).
inline int tq1_trit(uint8_t q, int n) {
    constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    return (unsigned(uint8_t(q * kPow3[n])) * 3) >> 8;
}

// Row functions (n elements, a multiple of 256). The quantizers are ggml's quantize_row_tq*_ref,
// which llama-quantize runs with or without an importance matrix (d = max |x|, no search).
void dequantize_row_tq1_0(const void* blocks, float* out, int64_t n);
void dequantize_row_tq2_0(const void* blocks, float* out, int64_t n);
void quantize_row_tq1_0(const float* in, void* blocks, int64_t n);
void quantize_row_tq2_0(const float* in, void* blocks, int64_t n);

}  // namespace k3::tensor
