// Q8_0 (ggml id 8): blocks of 32 elements, 34 bytes = f16 scale d, then 32 int8 q.
// value[i] = d * q[i]  (k3-architecture.md §9).
#pragma once

#include <cstdint>

namespace k3::tensor {

inline constexpr int kQ8_0BlockSize = 32;
inline constexpr int kQ8_0BlockBytes = 34;

void dequantize_row_q8_0(const void* blocks, float* out, int64_t n);
// ggml's reference rounding: d = amax/127, q = roundf(x * (1/d)) with the f32 1/d, d stored as f16.
void quantize_row_q8_0(const float* in, void* blocks, int64_t n);

}  // namespace k3::tensor
