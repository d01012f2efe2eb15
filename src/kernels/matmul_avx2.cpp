// The AVX2 + FMA multi-token matmul micro-kernel: matmul_tile.h instantiated for simd_avx2.h's
// Avx2. Only called when CPUID reports the level (isa.cpp).
// Every other header comes first, outside the target region (see simd_avx2.h).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/matmul.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/matmul_tile.h"
#include "kernels/simd_avx2.h"
#pragma GCC pop_options

namespace k3::kernels {

// 4 × 3 accumulators + 3 activations + 1 weight = the 16 ymm registers.
TileProductFn avx2_tile_product() { return &simd::TileProduct<simd::Avx2, 4, 3>::product; }

// 6 × 2 accumulators + 2 row vectors + 1 coefficient of the 16 ymm registers.
CombineRowsFn avx2_combine_rows() { return &simd::RowCombination<simd::Avx2, 6, 2>::combine; }

}  // namespace k3::kernels
