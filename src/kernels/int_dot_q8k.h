// The integer kernels of the 256-value formats (K-quants, IQ1…IQ4_XS, TQ) with Q8_K activations;
// int_dot.h defines their arithmetic ("× Q8_K"). Each format is described once in plain integers
// (int_dot_q8k_formats.h, the scalar reference) and decoded in registers by the SIMD levels
// (int_dot_q8k_simd.h); the levels differ only in how they form the integer sums, and agree bit
// for bit.
#pragma once

#include "kernels/int_dot.h"

namespace k3::kernels {

inline constexpr int kQ8KSlots = 16;  // 16-value slots of a 256-value block, one Q8_K bsum each

// Per level (int_dot_q8k.cpp, int_dot_q8k_avx2.cpp, int_dot_q8k_avx512.cpp): the kernel of a
// 256-value weight type, null for other types.
IntDotFn scalar_q8k_int_dot(tensor::Type weight);
IntDotFn avx2_q8k_int_dot(tensor::Type weight);
IntDotFn avx512_q8k_int_dot(tensor::Type weight);  // AVX-512 VL + VNNI
// The tile kernels of the SIMD levels (IntDotTileFn), for the same types.
IntDotTileFn avx2_q8k_int_dot_tile(tensor::Type weight);
IntDotTileFn avx512_q8k_int_dot_tile(tensor::Type weight);
// The lane kernels (IntDotLanesFn) of the formats whose levels are unsigned bytes (Q2_K…Q6_K),
// null for the others.
IntDotLanesFn avx2_q8k_int_dot_lanes(tensor::Type weight);
IntDotLanesFn avx512_q8k_int_dot_lanes(tensor::Type weight);
// AMX (int_dot_q8k_amx.cpp): int_dot.h's AMX kernel and its packing for these types.
IntDotAmxFn amx_q8k_int_dot(tensor::Type weight);
size_t amx_q8k_group_bytes(int64_t n);
size_t amx_q8k_scratch_bytes(int64_t n);
void pack_act_amx_q8k(const void* act_rows, size_t act_stride, int64_t n_tokens, int64_t n, void* group);

}  // namespace k3::kernels
