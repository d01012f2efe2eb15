// The legacy (Q4_0..Q5_1), K (Q2_K..Q6_K), IQ and ternary weight formats behind the kernel seam:
// * row decoders per (type, isa), each writing exactly the f32 values of the type's
//   traits.dequantize_row (bit for bit: the same two roundings, no FMA), only faster; the
//   multi-token matmul decodes weight tiles through them (F16, BF16, Q8_0 and MXFP4 too:
//   dequant_simple_avx2.cpp);
// * fused dot kernels (unpack a block, decode it in registers, FMA with x), which dot.cpp uses
//   for these types at the SIMD levels. They accumulate in the order of that level's dot_f32, so
//   a row through them equals dot_f32 of its decoded values bit for bit. (The multi-token
//   micro-kernel, matmul_tile.h, sums in its own order.) Their scalar reference is dot.cpp's
//   decode-then-sum kernel.
// Both are written once over the common unpacked shape of quant_unpack.h.
#pragma once

#include <cstdint>

#include "kernels/isa.h"
#include "tensor/tensor_type.h"

namespace k3::kernels {

// The decoder of `type` for `isa`: a SIMD one where it exists, else the traits' scalar one;
// null if the CPU lacks `isa` or k3 cannot decode the type.
tensor::DequantizeRow dequantize_row_kernel(tensor::Type type, Isa isa);
// The best decoder for this CPU (null if k3 cannot decode the type).
tensor::DequantizeRow dequantize_row_kernel(tensor::Type type);

// Dot of a row of n weights (whole blocks) with n f32 activations; same signature as DotRowFn.
using QuantDotFn = float (*)(const void* row, const float* x, int64_t n);
// The fused kernel of `type` for a SIMD `isa` the CPU has; null otherwise (scalar included).
QuantDotFn quant_dot_kernel(tensor::Type type, Isa isa);

// Per-isa tables (dequant_avx2.cpp, dot_quant_avx512.cpp); null for other types. Decoding is
// shuffles and masks on 128/256-bit lanes, so AVX-512 machines decode with the AVX2 decoders;
// the AVX-512 dot kernels decode the same unpacked levels 16 at a time.
tensor::DequantizeRow avx2_dequantize_row(tensor::Type type);
// F16, BF16, Q8_0 and MXFP4 (dequant_simple_avx2.cpp).
tensor::DequantizeRow avx2_dequantize_simple_row(tensor::Type type);
QuantDotFn avx2_quant_dot(tensor::Type type);
QuantDotFn avx512_quant_dot(tensor::Type type);

}  // namespace k3::kernels
