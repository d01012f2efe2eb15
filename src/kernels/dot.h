// The weight-type seam. For every weight type one function dots a row of n weights (the type's
// blocks) with n f32 activations; matmul and every layer go through it, so adding a type (or a
// SIMD kernel for one) is a table entry in dot.cpp, never a copied kernel. Types without a
// dedicated kernel use the generic one: dequantize a block run with the type's traits, then an
// f32 dot. Activations stay f32: this is the precision the fixtures judge parity in.
#pragma once

#include <bit>
#include <cstdint>

#include "kernels/isa.h"
#include "tensor/tensor_type.h"

namespace k3::kernels {

using DotRowFn = float (*)(const void* row, const float* x, int64_t n);

// The kernel for (type, isa): null if the CPU lacks the isa or the type cannot be decoded.
// Isa::scalar is the reference every SIMD kernel is tested against.
DotRowFn dot_row_kernel(tensor::Type type, Isa isa);
// The best kernel for this CPU; throws k3::Error if the type cannot be decoded.
DotRowFn dot_row_kernel(tensor::Type type);

// Plain f32 vector primitives (best isa).
float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float alpha, const float* x, float* y, int64_t n);  // y += alpha * x

// Per-isa kernel sets, implemented in dot_scalar.cpp, dot_avx2.cpp, dot_avx512.cpp.
struct IsaDotKernels {
    DotRowFn f32, f16, bf16, q8_0, mxfp4;
    float (*dot_f32)(const float* a, const float* b, int64_t n);
    void (*axpy_f32)(float alpha, const float* x, float* y, int64_t n);
};
const IsaDotKernels& scalar_dot_kernels();
const IsaDotKernels& avx2_dot_kernels();
const IsaDotKernels& avx512_dot_kernels();

// E8M0 "half" scale of an MXFP4 block, 2^(e - 128) (the factor of ggml's doubled E2M1 table),
// built from bits as ggml does: e = 0 and 1 give the subnormals 2^-128 and 2^-127.
inline float mxfp4_half_scale(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    return std::bit_cast<float>(bits);
}
extern const int8_t kMxfp4DoubledValues[16];  // {0,1,2,3,4,6,8,12, -0,-1,-2,-3,-4,-6,-8,-12}

}  // namespace k3::kernels
