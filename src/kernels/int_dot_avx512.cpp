// AVX-512 VNNI integer kernels: two blocks per 512-bit register and one vpdpbusd (|w| as
// unsigned times a with w's sign). The float combination stays on eight 256-bit lanes, as
// int_dot.h defines it. Only called when CPUID reports AVX-512 F/BW/VL and VNNI (int_dot.cpp).
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/int_dot.h"
#include "kernels/int_dot_formats.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#include "kernels/int_dot_simd.h"

namespace k3::kernels {
namespace {

struct Avx512VnniLevel {
    static __m512i pair(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
    // Blocks 2k and 2k+1 in one register: |w| and the lanes where w < 0.
    struct Prepared {
        __m512i magnitude[4];
        __mmask64 negative[4];
    };
    static void prepare(const __m256i* levels, int, Prepared& p) {
        for (int k = 0; k < 4; ++k) {
            const __m512i w = pair(levels[2 * k], levels[2 * k + 1]);
            p.magnitude[k] = _mm512_abs_epi8(w);
            p.negative[k] = _mm512_movepi8_mask(w);
        }
    }
    template <typename F>
    static __m256i block_sums(const Prepared& p, const int_formats::ActBlock<F>* a, int count) {
        const auto acts = [&](int j) {
            return j < count ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[j].qs)) : _mm256_setzero_si256();
        };
        __m256i sums[8];
        for (int k = 0; k < 4; ++k) {
            const __m512i av = pair(acts(2 * k), acts(2 * k + 1));
            const __m512i signed_a = _mm512_mask_sub_epi8(av, p.negative[k], _mm512_setzero_si512(), av);
            const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p.magnitude[k], signed_a);
            sums[2 * k] = _mm512_castsi512_si256(s);
            sums[2 * k + 1] = _mm512_extracti64x4_epi64(s, 1);
        }
        return int_simd::block_totals(sums);
    }
};

}  // namespace

const IntDotKernels& avx512_int_dot_kernels() {
    using namespace int_formats;
    using int_simd::int_dot;
    using L = Avx512VnniLevel;
    static const IntDotKernels k{int_dot<Q8_0, L>,  int_dot<Mxfp4, L>, int_dot<Q4_0, L>, int_dot<Q5_0, L>,
                                 int_dot<Iq4Nl, L>, int_dot<Q4_1, L>,  int_dot<Q5_1, L>};
    return k;
}

const IntDotRowsKernels& avx512_int_dot_rows_kernels() {
    using namespace int_formats;
    using int_simd::int_dot_rows;
    using L = Avx512VnniLevel;
    static const IntDotRowsKernels k{int_dot_rows<Q8_0, L>,  int_dot_rows<Mxfp4, L>, int_dot_rows<Q4_0, L>,
                                     int_dot_rows<Q5_0, L>,  int_dot_rows<Iq4Nl, L>, int_dot_rows<Q4_1, L>,
                                     int_dot_rows<Q5_1, L>};
    return k;
}

}  // namespace k3::kernels
#pragma GCC pop_options
