// Integer activations. Before a product with a quantised weight, llama.cpp's CPU backend rounds
// the f32 activation row to the block format it pairs with the weight type (ggml-cpu.c,
// type_traits_cpu[].vec_dot_type) and multiplies in integers. k3's native numerics do the same,
// rounding exactly as llama.cpp's x86 build does (ggml-cpu/arch/x86/quants.c):
//   Q8_0 (weights Q8_0, MXFP4, Q4_0, Q5_0, IQ4_NL): 32 values, d = amax/127 stored as f16
//        (nearest even), q = round-half-even(x · (127/amax)), saturated to int8;
//   Q8_1 (weights Q4_1, Q5_1): Q8_0's d and q, plus s = f16(d · Σq) with the unrounded d;
//   Q8_K (weights Q2_K…Q6_K, IQ4_XS, IQ1…IQ3, TQ): 256 values, the signed value m of largest
//        magnitude (first on ties), iscale = -127/m, q = min(127, round-half-even(iscale · x)),
//        d = 1/iscale (f32), bsums = Σq per 16 (llama.cpp's x86 build runs its reference here).
// F32, F16 and BF16 weights keep f32 activations (format f32): there is nothing to round to.
// For finite inputs every q lies in [-127, 127]; the integer kernels (int_dot.h) rely on it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.h"
#include "tensor/tensor_type.h"

namespace k3::kernels {

enum class ActivationFormat { f32, q8_0, q8_1, q8_K };

struct ActBlockQ8_0 {
    uint16_t d;  // f16
    int8_t qs[32];
};
struct ActBlockQ8_1 {
    uint16_t d, s;  // f16: scale, scale · Σqs
    int8_t qs[32];
};
struct ActBlockQ8_K {
    float d;
    int8_t qs[256];
    int16_t bsums[16];  // Σ qs[16j .. 16j+15]
};
static_assert(sizeof(ActBlockQ8_0) == 34 && sizeof(ActBlockQ8_1) == 36 && sizeof(ActBlockQ8_K) == 292);

// The activation format llama.cpp's CPU backend pairs with `weight` (f32 for F32/F16/BF16 and
// for types it multiplies in float).
ActivationFormat activation_format(tensor::Type weight);
const char* activation_format_name(ActivationFormat format);
int64_t activation_block_size(ActivationFormat format);    // elements per block (1 for f32)
size_t activation_block_bytes(ActivationFormat format);
// Bytes of a row of n elements; throws k3::Error if n is not a multiple of the block size.
size_t activation_row_bytes(ActivationFormat format, int64_t n);

// Rounds n f32 values (a multiple of the block size) to blocks of the format.
using QuantizeActivationFn = void (*)(const float* x, void* blocks, int64_t n);
// The quantiser of (format, isa): null if the CPU lacks the isa or the format is f32. Every level
// writes the same bytes as Isa::scalar, the reference (AVX-512 machines run the AVX2 one: a row is
// rounded once per matmul, so its speed does not matter).
QuantizeActivationFn activation_quantizer(ActivationFormat format, Isa isa);
// The best quantiser for this CPU, after checking n: throws k3::Error naming `what` if n is not
// a multiple of the format's block size.
void quantize_activation_row(ActivationFormat format, const float* x, void* blocks, int64_t n, const char* what);

// Scalar references (activation_quant.cpp) and the AVX2 quantisers (activation_quant_avx2.cpp).
void quantize_act_q8_0_scalar(const float* x, void* blocks, int64_t n);
void quantize_act_q8_1_scalar(const float* x, void* blocks, int64_t n);
void quantize_act_q8_K_scalar(const float* x, void* blocks, int64_t n);
void quantize_act_q8_0_avx2(const float* x, void* blocks, int64_t n);
void quantize_act_q8_1_avx2(const float* x, void* blocks, int64_t n);
void quantize_act_q8_K_avx2(const float* x, void* blocks, int64_t n);

}  // namespace k3::kernels
