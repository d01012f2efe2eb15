// AVX2 integer kernels: each block's product by maddubs (|w| as unsigned times a with w's sign)
// and madd. Only called when CPUID reports AVX2.
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
    struct Prepared {
        __m256i w[8], magnitude[8];
    };
    static void prepare(const __m256i* levels, int, Prepared& p) {
        for (int j = 0; j < 8; ++j) {
            p.w[j] = levels[j];
            p.magnitude[j] = _mm256_sign_epi8(levels[j], levels[j]);
        }
    }
    // Per block, 8 int32 lanes whose total is Σ w·a. |w| <= 128 and |a| <= 127, so the int16
    // pair sums of maddubs cannot saturate.
    template <typename F>
    static __m256i block_sums(const Prepared& p, const int_formats::ActBlock<F>* a, int count) {
        __m256i sums[8];
        for (int j = 0; j < 8; ++j) {
            if (j >= count) {
                sums[j] = _mm256_setzero_si256();
                continue;
            }
            const __m256i act = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[j].qs));
            const __m256i pairs = _mm256_maddubs_epi16(p.magnitude[j], _mm256_sign_epi8(act, p.w[j]));
            sums[j] = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
        }
        return int_simd::block_totals(sums);
    }
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

const IntDotRowsKernels& avx2_int_dot_rows_kernels() {
    using namespace int_formats;
    using int_simd::int_dot_rows;
    static const IntDotRowsKernels k{int_dot_rows<Q8_0, Avx2Level>,  int_dot_rows<Mxfp4, Avx2Level>,
                                     int_dot_rows<Q4_0, Avx2Level>,  int_dot_rows<Q5_0, Avx2Level>,
                                     int_dot_rows<Iq4Nl, Avx2Level>, int_dot_rows<Q4_1, Avx2Level>,
                                     int_dot_rows<Q5_1, Avx2Level>};
    return k;
}

}  // namespace k3::kernels
#pragma GCC pop_options
