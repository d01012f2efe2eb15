// AVX-512 VNNI integer kernels: one vpdpbusd per block (|w| as unsigned times a with w's sign
// in the multi-token tiles; decode's tiles and the lane kernels take the levels biased to
// unsigned instead, int_dot_simd.h). The float
// combination is int_dot.h's, on eight lanes. Only called when CPUID reports AVX-512
// F/BW/VL and VNNI (int_dot.cpp).
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/int_dot.h"
#include "kernels/int_dot_formats.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#include "kernels/int_dot_simd.h"
#include "kernels/int_dot_zmm.h"
#include "kernels/zmm_lanes.h"

namespace k3::kernels {

const IntDotKernels& avx512_int_dot_kernels() {
    using namespace int_formats;
    using int_simd::int_dot;
    using L = Avx512VnniLevel;
    static const IntDotKernels k{int_dot<Q8_0, L>,  int_dot<Mxfp4, L>, int_dot<Q4_0, L>, int_dot<Q5_0, L>,
                                 int_dot<Iq4Nl, L>, int_dot<Q4_1, L>,  int_dot<Q5_1, L>};
    return k;
}

const IntDotTileKernels& avx512_int_dot_tile_kernels() {
    using namespace int_formats;
    using int_simd::int_dot_tile;
    using int_simd::lane_chunks;
    using int_simd::RowLanes;
    using L = Avx512VnniLevel;
    using Z = int_simd::ZmmLanes;
    static const IntDotTileKernels k{int_dot_tile<Q8_0, L>,
                                     int_dot_tile<Mxfp4, L>,
                                     int_dot_tile<Q4_0, L>,
                                     int_dot_tile<Q5_0, L>,
                                     int_dot_tile<Iq4Nl, L>,
                                     int_dot_tile<Q4_1, L>,
                                     int_dot_tile<Q5_1, L>,
                                     lane_chunks<RowLanes<Q8_0, Z>>,
                                     lane_chunks<RowLanes<Mxfp4, Z>>,
                                     lane_chunks<RowLanes<Q4_0, Z>>,
                                     lane_chunks<RowLanes<Q5_0, Z>>,
                                     lane_chunks<RowLanes<Iq4Nl, Z>>,
                                     lane_chunks<RowLanes<Q4_1, Z>>,
                                     lane_chunks<RowLanes<Q5_1, Z>>};
    return k;
}

}  // namespace k3::kernels
#pragma GCC pop_options
