// AVX-512 VNNI integer kernels: one vpdpbusd per block (|w| as unsigned times a with w's sign).
// The float combination is int_dot.h's, on eight lanes. Only called when CPUID reports AVX-512
// F/BW/VL and VNNI (int_dot.cpp).
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

// The 256-bit form (AVX-512 VL): one vpdpbusd per block replaces maddubs + madd. (Two blocks
// per 512-bit register measured slower: the inserts and mask moves cost more than they save.)
struct Avx512VnniLevel {
    struct Prepared {
        __m256i w[8], magnitude[8];
    };
    static void prepare(const __m256i* levels, int, Prepared& p) {
        for (int j = 0; j < 8; ++j) {
            p.w[j] = levels[j];
            p.magnitude[j] = _mm256_sign_epi8(levels[j], levels[j]);
        }
    }
    template <typename F>
    static __m256i block_sums(const Prepared& p, const int_formats::ActBlock<F>* a, int count) {
        __m256i sums[8];
        for (int j = 0; j < 8; ++j) {
            if (j >= count) {
                sums[j] = _mm256_setzero_si256();
                continue;
            }
            const __m256i act = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[j].qs));
            sums[j] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), p.magnitude[j], _mm256_sign_epi8(act, p.w[j]));
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
