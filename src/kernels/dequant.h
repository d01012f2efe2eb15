// Row decoders per (weight type, isa). Every decoder writes exactly the f32 values of the type's
// traits.dequantize_row (bit for bit: the same products in the same order, no FMA), only faster;
// the generic dot kernel and the multi-token matmul decode weights through this table.
#pragma once

#include "kernels/isa.h"
#include "tensor/tensor_type.h"

namespace k3::kernels {

// The decoder of `type` for `isa`: a SIMD one where it exists, else the traits' scalar one;
// null if the CPU lacks `isa` or k3 cannot decode the type.
tensor::DequantizeRow dequantize_row_kernel(tensor::Type type, Isa isa);
// The best decoder for this CPU (null if k3 cannot decode the type).
tensor::DequantizeRow dequantize_row_kernel(tensor::Type type);

// AVX2 decoders of the legacy, K and IQ4 formats (dequant_avx2.cpp); null for other types.
// AVX-512 machines use them too: decoding is shuffles and nibble masks on 128/256-bit lanes,
// the f32 work after it is the dot product, which has its own AVX-512 kernel.
tensor::DequantizeRow avx2_dequantize_row(tensor::Type type);

}  // namespace k3::kernels
