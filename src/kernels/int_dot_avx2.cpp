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
    // 8 int32 lanes whose total is Σ w·a over the block. |w| <= 128 and |a| <= 127, so the
    // int16 pair sums of maddubs cannot saturate.
    static __m256i block_product(__m256i w, __m256i a) {
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
        return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    }
    template <typename F>
    static __m256i block_sums(const uint8_t* w, const int_formats::ActBlock<F>* a, int count) {
        __m256i p[8];
        for (int j = 0; j < 8; ++j)
            p[j] = j < count ? block_product(int_simd::levels<F>(w + j * F::kBytes),
                                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[j].qs)))
                             : _mm256_setzero_si256();
        return int_simd::block_totals(p);
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

}  // namespace k3::kernels
#pragma GCC pop_options
