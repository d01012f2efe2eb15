// The AVX-512 (F/BW/VL) level of vector_ops.h: vector_ops_simd.h instantiated for simd_avx512.h's Avx512.
// Only called when CPUID reports the level (isa.cpp).
// Every system header the templates use comes first, outside the target region, so that no
// library code is compiled for this level and shared with the rest of the program.
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/reduce_avx512.h"
#include "kernels/vector_ops.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
#include "kernels/simd_avx512.h"
#include "kernels/vector_ops_simd.h"
#pragma GCC pop_options

namespace k3::kernels {

const VectorOpsKernels& avx512_vector_ops() {
    static const VectorOpsKernels kernels = simd::vector_ops_table<simd::Avx512>();
    return kernels;
}

}  // namespace k3::kernels
