// The AVX-512 VNNI tile kernels with AVX-512 VBMI: decode's 4-bit code formats gather four
// blocks' codes by one vpermt2b and look the table formats' levels up by vpermb
// (int_dot_zmm.h, kVbmi); every other kernel is int_dot_avx512.cpp's. Only called when CPUID
// reports VBMI beside AVX-512 VNNI (int_dot.cpp, isa.h's vbmi_enabled).
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
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx2,fma,f16c")
#include "kernels/int_dot_simd.h"
#include "kernels/int_dot_zmm.h"

namespace k3::kernels {

const IntDotTileKernels& avx512_vbmi_int_dot_tile_kernels() {
    using namespace int_formats;
    using int_simd::int_dot_tile;
    using L = Avx512VnniLevelOf<true>;
    static const IntDotTileKernels k = [] {
        IntDotTileKernels tiles = avx512_int_dot_tile_kernels();
        tiles.mxfp4 = int_dot_tile<Mxfp4, L>;
        tiles.q4_0 = int_dot_tile<Q4_0, L>;
        tiles.iq4_nl = int_dot_tile<Iq4Nl, L>;
        tiles.q4_1 = int_dot_tile<Q4_1, L>;
        return tiles;
    }();
    return k;
}

}  // namespace k3::kernels
#pragma GCC pop_options
