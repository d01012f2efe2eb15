// AVX-512 VNNI × Q8_K kernels: 32 products at a time by one vpdpbusd on 256-bit registers (|q| as
// unsigned times a with q's sign). Only called when CPUID reports AVX-512 F/BW/VL and VNNI.
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

#include "kernels/int_dot_q8k.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#include "kernels/int_dot_q8k_fused_simd.h"
#include "kernels/int_dot_q8k_simd.h"

namespace k3::kernels {
namespace {

struct VnniProducts {
    static __m256i of(__m256i q, __m256i a) {
        return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
    }
    static constexpr bool kByteDots = true;
    static __m256i byte_dot(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
    // vpdpwssd: the 16-bit multiply-add and the accumulation in one instruction.
    static __m256i add_scaled(__m256i acc, __m256i pairs, __m256i scales) { return _mm256_dpwssd_epi32(acc, pairs, scales); }
};

}  // namespace

IntDotFn avx512_q8k_int_dot(tensor::Type weight) {
    if (IntDotFn fused = q8k_formats::with_fused_format<IntDotFn>(
            weight, nullptr, []<typename F>() -> IntDotFn { return &q8k_fused::int_dot<F, VnniProducts>; }))
        return fused;
    return unpack::with_format<IntDotFn>(weight, nullptr, []<typename F>() -> IntDotFn {
        if constexpr (F::kBlockSize == 256) return &q8k_simd::int_dot<F, VnniProducts>;
        else return nullptr;
    });
}

IntDotTileFn avx512_q8k_int_dot_tile(tensor::Type weight) {
    if (IntDotTileFn fused = q8k_formats::with_fused_format<IntDotTileFn>(
            weight, nullptr, []<typename F>() -> IntDotTileFn { return &q8k_fused::int_dot_tile<F, VnniProducts>; }))
        return fused;
    return unpack::with_format<IntDotTileFn>(weight, nullptr, []<typename F>() -> IntDotTileFn {
        if constexpr (F::kBlockSize == 256) return &q8k_simd::int_dot_tile<F, VnniProducts>;
        else return nullptr;
    });
}

}  // namespace k3::kernels
#pragma GCC pop_options
