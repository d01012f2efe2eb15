// The AVX2 + FMA level of vector_ops.h: vector_ops_simd.h instantiated for simd_avx2.h's Avx2.
// Only called when CPUID reports the level (isa.cpp).
// Every system header the templates use comes first, outside the target region, so that no
// library code is compiled for this level and shared with the rest of the program.
#include <immintrin.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/vector_ops.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/simd_avx2.h"
#include "kernels/vector_ops_simd.h"
#pragma GCC pop_options

namespace k3::kernels {

const VectorOpsKernels& avx2_vector_ops() {
    static const VectorOpsKernels kernels = simd::vector_ops_table<simd::Avx2>();
    return kernels;
}

}  // namespace k3::kernels
