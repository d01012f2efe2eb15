// MXFP4 (ggml id 39, OCP MX): blocks of 32 elements, 17 bytes = E8M0 exponent e, then 16 bytes
// of E2M1 codes (low nibble = element j, high nibble = element j+16).
// value[i] = kvalues_mxfp4[code_i] * 2^(e - 128)  (k3-architecture.md §9).
#pragma once

#include <cstdint>
#include <string_view>

namespace k3::tensor {

inline constexpr int kMxfp4BlockSize = 32;
inline constexpr int kMxfp4BlockBytes = 17;

// E2M1 values doubled, as ggml stores them (multiplied by half the E8M0 scale).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// ggml's "half" E8M0 decode: 2^(e - 128), with e = 0 -> 2^-128 and e = 1 -> 2^-127 (f32 subnormals).
float e8m0_to_f32_half(uint8_t e);

void dequantize_row_mxfp4(const void* blocks, float* out, int64_t n);
// ggml's reference rounding: e = floor(log2(amax)) - 2 + 127, nearest code, lowest index on ties.
void quantize_row_mxfp4(const float* in, void* blocks, int64_t n);

// Throws k3::Error naming `what` and the block if any block's E8M0 byte is 0xFF (NaN in the
// OCP spec; ggml would silently decode it as 2^127).
void validate_mxfp4_blocks(const void* blocks, int64_t n_blocks, std::string_view what);

}  // namespace k3::tensor
