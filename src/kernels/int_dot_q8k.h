// The integer kernels of the 256-value formats (K-quants, IQ1…IQ4_XS, TQ) with Q8_K activations;
// int_dot.h defines their arithmetic. The fused formats (int_dot_q8k_formats.h) decode each block
// in registers (int_dot_q8k_fused_simd.h); the others are written once over the unpacked shape of
// quant_unpack.h (int8 levels, a scale and an offset per sub-block), whose AVX2 unpacking runs at
// every level (checked bit-exact against the scalar decoders). The levels differ only in how they
// form the integer sums, and agree bit for bit.
#pragma once

#include "kernels/int_dot.h"
#include "kernels/quant_unpack.h"

namespace k3::kernels {

inline constexpr int kQ8KSlots = 16;  // 16-value slots of a 256-value block, one Q8_K bsum each

// The scale and offset of each slot: those of the sub-block holding it.
template <typename Format>
void slot_factors(const unpack::Unpacked& u, float* scale, float* offset) {
    for (int j = 0; j < kQ8KSlots; ++j) {
        const int sub = 16 * j / Format::kSubSize;
        scale[j] = u.scale[sub];
        offset[j] = Format::kOffset ? u.offset[sub] : 0.0f;
    }
}

// Per level (int_dot_q8k.cpp, int_dot_q8k_avx2.cpp, int_dot_q8k_avx512.cpp): the kernel of a
// 256-value weight type, null for other types. The scalar one needs AVX2 for the unpacking of the
// formats that are not fused: on a CPU without it those types keep f32 activations.
IntDotFn scalar_q8k_int_dot(tensor::Type weight);
IntDotFn avx2_q8k_int_dot(tensor::Type weight);
IntDotFn avx512_q8k_int_dot(tensor::Type weight);  // AVX-512 VL + VNNI
// The tile kernels of the SIMD levels (IntDotTileFn), for the same types.
IntDotTileFn avx2_q8k_int_dot_tile(tensor::Type weight);
IntDotTileFn avx512_q8k_int_dot_tile(tensor::Type weight);

}  // namespace k3::kernels
