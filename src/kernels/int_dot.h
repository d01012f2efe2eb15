// The integer-activation seam: for every weight type with an integer kernel, one function dots
// a row of n weights (the type's blocks) with the same row of activations already rounded to
// the type's activation format (activation_quant.h). matmul uses it under native numerics.
//
// Arithmetic, identical at every level (the scalar kernel is the reference each SIMD kernel
// must equal bit for bit):
//   * per block b, the integer sum isum_b = Σ w_level · a_level, exact in int32;
//   * block b goes to float accumulator b % 8:  acc[b%8] = fma(d_w · d_a, float(isum_b), acc[b%8])
//     (d_w · d_a one f32 product); formats with an offset (Q4_1, Q5_1: x = d·q + m) also keep
//     off[b%8] = fma(m_w, s_a, off[b%8]) with the activation's s = d_a·Σa;
//   * the row's value = reduce(acc) (+ reduce(off)), reduce(a) = ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)),
//     the order of an 8-lane horizontal sum.
// Eight lanes because that is one AVX2 register of block sums; the AVX-512 kernels keep the same
// eight so that the levels agree exactly and a fixture result does not depend on the CPU.
// × Q8_K (the 256-value formats: K-quants, IQ1…IQ4_XS, TQ; int_dot_q8k.h), llama.cpp's per-block
// integer form, with x = d·sc·level − dmin·m (sc, m the integer scale and min of the 16-value slot;
// d and dmin an f16 times a power of two the format fixes, int_dot_q8k_formats.h):
//   * per block b, isum_b = Σ_j sc_j · Σ_{i in slot j} w_level · a_level, exact in int32, and for
//     Q2_K, Q4_K, Q5_K msum_b = Σ_j m_j · bsum_bj, exact in int32;
//   * acc = fma(d_w · d_a, float(isum_b), acc) and off = fma(dmin_w · d_a, float(msum_b), off),
//     blocks in order (one f32 product each);
//   * the row's value = acc − off (off = 0 for the formats without mins).
// The kernels require activation levels in [-127, 127], which the quantisers give for finite rows.
//
// Adding a type: write its kernel per level, declare it below, and add one row to the table in
// int_dot.cpp (its tile kernel is optional); a 256-value format instead gets every × Q8_K
// kernel from its description in int_dot_q8k_formats.h and its register decoder in
// int_dot_q8k_simd.h. A type without a kernel keeps f32 activations
// (kernels::matmul falls back to the DotRowFn path).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/activation_quant.h"
#include "kernels/isa.h"
#include "tensor/tensor_type.h"

namespace k3::kernels {

using IntDotFn = float (*)(const void* weight_row, const void* act_row, int64_t n);
// The products of n_rows weight rows (weight_stride bytes apart) with n_tokens activation rows
// (act_stride bytes apart): y[t * y_stride + r] = IntDotFn(row r, token t, n), bit for bit, in
// tiles of several rows and tokens so that each weight block is decoded once for several tokens
// and each activation block loaded once for several rows (prefill; decode's rows share the one
// activation row). Optional per type: matmul calls the IntDotFn per row and token where a type
// has none.
using IntDotTileFn = void (*)(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_rows,
                              size_t act_stride, int64_t n_tokens, int64_t n, float* y, int64_t y_stride);

// Activation rows regrouped for the lane kernels, per group of eight blocks: qs[32k + 4j + i] is
// block j's element 4k + i, so that 32-bit lane j of every 32 bytes belongs to block j and eight
// multiply-adds leave each block's integer sum in its own lane, with no horizontal sums (the
// weights are transposed the same way once per group and row). d and s (Q8_1 only) as f32, and
// sums[j] = Σ of block j's levels (for the kernels that take the weights' levels plus a bias as
// unsigned bytes, int_dot_simd.h); zero for blocks past the row's end. A Q8_K block is one group,
// its 32-value sub-blocks the eight "blocks" (the × Q8_K lane kernels broadcast each four-byte
// quad to eight weight rows' lanes, int_dot_q8k_simd.h); every d[j] is the block's d, and bsums
// (Q8_K only, in place of sums) its 16 slot sums, and sub_sums (Q8_K only) the sub-blocks' own
// sums (bsums 2j and 2j + 1 added), which the lane kernels of the formats with one min per
// sub-block take in pairs (Q4_K, Q5_K: four multiply-adds of each token's mins instead of eight).
// Rounded the same, so the lane kernels' results are the tile kernels', bit for bit.
struct ActLaneGroup {
    int8_t qs[256];
    float d[8], s[8];
    int32_t sums[8];
    int16_t bsums[16];
    int16_t sub_sums[8];
};
int64_t act_lane_groups(int64_t n);  // groups of a row of n values
// Packs one row (n values, activation_format q8_0, q8_1 or q8_K) into act_lane_groups(n) groups:
// pack_act_lanes_avx2 where the best level has AVX2 (the same bytes; a 2048-value Q8_0 row took
// 1.14 µs in the reference and 0.08 µs in it on Zen 3), else the reference.
void pack_act_lanes(ActivationFormat format, const void* act_row, int64_t n, ActLaneGroup* out);
void pack_act_lanes_scalar(ActivationFormat format, const void* act_row, int64_t n, ActLaneGroup* out);
void pack_act_lanes_avx2(ActivationFormat format, const void* act_row, int64_t n, ActLaneGroup* out);
// IntDotTileFn's product with act_rows packed (ActLaneGroup rows, act_stride bytes apart), for
// prefill: y[t * y_stride + r] = IntDotFn(row r, token t, n), bit for bit.
using IntDotLanesFn = IntDotTileFn;

// AMX int8 tiles (isa.h: amx_supported()), for prefill: 16 weight rows by kAmxTokens tokens per
// tile product, the tokens of each group packed once per matmul (pack_act_amx) into the tiles'
// layout. y[t * y_stride + r] = IntDotFn(row r, token t, n), bit for bit. For the × Q8_0 formats
// without an offset (Q8_0, MXFP4, Q4_0, Q5_0, IQ4_NL) and the 256-value formats × Q8_K.
constexpr int kAmxTokens = 16;
// One packed group of kAmxTokens activation rows of n values; the scratch one call needs for
// rows of n values (format: q8_0 or q8_K, the weight type's activation_format).
size_t amx_group_bytes(ActivationFormat format, int64_t n);
size_t amx_scratch_bytes(ActivationFormat format, int64_t n);
// Packs n_tokens <= kAmxTokens activation rows (act_stride bytes apart) into one group; tokens
// past n_tokens are zeros.
void pack_act_amx(ActivationFormat format, const void* act_rows, size_t act_stride, int64_t n_tokens, int64_t n, void* group);
// act_groups: ceil(n_tokens / kAmxTokens) packed groups, group_stride bytes apart; scratch:
// amx_scratch_bytes(n) bytes, 64-byte aligned.
using IntDotAmxFn = void (*)(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_groups,
                             size_t group_stride, int64_t n_tokens, int64_t n, float* y, int64_t y_stride, void* scratch);
// Null where the CPU lacks AMX or the type has no AMX kernel (int_dot_amx.cpp).
IntDotAmxFn int_dot_amx_kernel(tensor::Type weight);

// The kernel for (weight type, isa): null if the type has no integer kernel or the CPU lacks the
// isa. Isa::avx512 needs AVX-512 VNNI besides F/BW/VL; without it the AVX2 kernel runs there.
IntDotFn int_dot_kernel(tensor::Type weight, Isa isa);
// The best kernel for this CPU (null: the type keeps f32 activations).
IntDotFn int_dot_kernel(tensor::Type weight);
// The tile kernel for (weight type, isa); null where there is none. At the selected level with
// AVX-512 VBMI enabled (isa.h), the VBMI set's.
IntDotTileFn int_dot_tile_kernel(tensor::Type weight, Isa isa);
struct IntDotTileKernels;
// The tile kernel of one set below for one of its types; null for any other type.
IntDotTileFn int_dot_tile_kernel(tensor::Type weight, const IntDotTileKernels& set);
IntDotTileFn int_dot_tile_kernel(tensor::Type weight);
// The lane kernel for (weight type, isa); null where there is none.
IntDotLanesFn int_dot_lanes_kernel(tensor::Type weight, Isa isa);
IntDotLanesFn int_dot_lanes_kernel(tensor::Type weight);
// The instruction set the integer kernels of `isa` use: "scalar", "avx2" or "avx512-vnni"
// (with "+vbmi" and "+amx" for the selected level where decode uses VBMI, prefill AMX tiles).
const char* int_dot_level_name(Isa isa);

// The kernels, per level (int_dot_scalar.cpp, int_dot_avx2.cpp, int_dot_avx512.cpp).
struct IntDotKernels {
    IntDotFn q8_0, mxfp4, q4_0, q5_0, iq4_nl;  // × Q8_0
    IntDotFn q4_1, q5_1;                      // × Q8_1
};
const IntDotKernels& scalar_int_dot_kernels();
const IntDotKernels& avx2_int_dot_kernels();
const IntDotKernels& avx512_int_dot_kernels();
// The tile kernels of the SIMD levels, for the same types.
struct IntDotTileKernels {
    IntDotTileFn q8_0, mxfp4, q4_0, q5_0, iq4_nl, q4_1, q5_1;
    IntDotLanesFn lanes_q8_0, lanes_mxfp4, lanes_q4_0, lanes_q5_0, lanes_iq4_nl, lanes_q4_1, lanes_q5_1;
};
const IntDotTileKernels& avx2_int_dot_tile_kernels();
const IntDotTileKernels& avx512_int_dot_tile_kernels();
const IntDotTileKernels& avx512_vbmi_int_dot_tile_kernels();  // int_dot_avx512_vbmi.cpp

}  // namespace k3::kernels
