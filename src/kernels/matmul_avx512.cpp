// The AVX-512 (F/BW/VL) multi-token matmul micro-kernel: matmul_tile.h instantiated for simd_avx512.h's
// Avx512. Only called when CPUID reports the level (isa.cpp).
// Every other header comes first, outside the target region (see simd_avx512.h).
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/matmul.h"
#include "kernels/reduce_avx512.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
#include "kernels/matmul_tile.h"
#include "kernels/simd_avx512.h"
#pragma GCC pop_options

namespace k3::kernels {

// 4 × 6 accumulators + 6 activations + 1 weight of the 32 zmm registers.
TileProductFn avx512_tile_product() { return &simd::TileProduct<simd::Avx512, 4, 6>::product; }

// 6 × 4 accumulators + 4 row vectors + 1 coefficient of the 32 zmm registers.
CombineRowsFn avx512_combine_rows() { return &simd::RowCombination<simd::Avx512, 6, 4>::combine; }

}  // namespace k3::kernels
