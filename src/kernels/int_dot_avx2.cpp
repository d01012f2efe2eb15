// AVX2 integer kernels: each block's product by maddubs (|w| as unsigned times a with w's sign,
// or the levels biased to unsigned where their pair sums fit int16: int_dot_simd.h's
// DecodeLevels and LanesBlock) and madd. Only called when CPUID reports AVX2.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/int_dot.h"
#include "kernels/int_dot_formats.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/int_dot_simd.h"

namespace k3::kernels {
namespace {

struct Avx2Level {
    struct Weight {
        __m256i w, magnitude;
    };
    static Weight weight(__m256i levels) { return {levels, _mm256_sign_epi8(levels, levels)}; }
    // |w| <= 128 and |a| <= 127, so the int16 pair sums of maddubs cannot saturate.
    static constexpr bool kPairSums = true;
    static __m256i widen(__m256i pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }
    static __m256i product(const Weight& w, __m256i a) { return widen(_mm256_maddubs_epi16(w.magnitude, _mm256_sign_epi8(a, w.w))); }
    static __m256i unsigned_product(__m256i u, __m256i a) { return widen(_mm256_maddubs_epi16(u, a)); }
    static __m256i add_unsigned_product(__m256i acc, __m256i u, __m256i a) { return _mm256_add_epi32(acc, unsigned_product(u, a)); }
};

}  // namespace

const IntDotKernels& avx2_int_dot_kernels() {
    using namespace int_formats;
    using int_simd::int_dot;
    static const IntDotKernels k{int_dot<Q8_0, Avx2Level>,  int_dot<Mxfp4, Avx2Level>, int_dot<Q4_0, Avx2Level>,
                                 int_dot<Q5_0, Avx2Level>,  int_dot<Iq4Nl, Avx2Level>, int_dot<Q4_1, Avx2Level>,
                                 int_dot<Q5_1, Avx2Level>};
    return k;
}

const IntDotTileKernels& avx2_int_dot_tile_kernels() {
    using namespace int_formats;
    using int_simd::int_dot_lanes;
    using int_simd::int_dot_tile;
    static const IntDotTileKernels k{int_dot_tile<Q8_0, Avx2Level>,  int_dot_tile<Mxfp4, Avx2Level>,
                                     int_dot_tile<Q4_0, Avx2Level>,  int_dot_tile<Q5_0, Avx2Level>,
                                     int_dot_tile<Iq4Nl, Avx2Level>, int_dot_tile<Q4_1, Avx2Level>,
                                     int_dot_tile<Q5_1, Avx2Level>,
                                     int_dot_lanes<Q8_0, Avx2Level>,  int_dot_lanes<Mxfp4, Avx2Level>,
                                     int_dot_lanes<Q4_0, Avx2Level>,  int_dot_lanes<Q5_0, Avx2Level>,
                                     int_dot_lanes<Iq4Nl, Avx2Level>, int_dot_lanes<Q4_1, Avx2Level>,
                                     int_dot_lanes<Q5_1, Avx2Level>};
    return k;
}

}  // namespace k3::kernels
#pragma GCC pop_options
