// The SIMD × Q8_K kernels of int_dot_q8k.h, written once over a Products policy:
//   static __m256i of(__m256i q, __m256i a): lane l = Σ of the 4 products q·a of bytes 4l..4l+3.
// Slots 0..7 and 8..15 of int_dot.h's arithmetic sit in two registers. Include only inside a
// target region that enables at least avx2,fma, after every system header; the functions live in
// an unnamed namespace so each including file has its own copies.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/int_dot_q8k.h"
#include "kernels/int_dot_simd.h"

namespace k3::kernels::q8k_simd {
namespace {

// The 8 slot sums of 4 product registers (register k: slots 2k, 2k+1), in slot order.
inline __m256i slot_sums(const __m256i* p) {
    const __m256i sums = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    return _mm256_permutevar8x32_epi32(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));  // from s0 s2 s4 s6 s1 s3 s5 s7
}

// The scalar kernel's arithmetic with slots 0..7 and 8..15 in two registers.
template <typename Format, typename Products>
float int_dot(const void* weight_row, const void* act_row, int64_t n) {
    const auto* w = static_cast<const typename Format::BlockType*>(weight_row);
    const auto* a = static_cast<const ActBlockQ8_K*>(act_row);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, off[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    unpack::Unpacked u;
    alignas(32) float scale[kQ8KSlots], offset[kQ8KSlots];
    for (int64_t b = 0; b < n / 256; ++b) {
        Format::unpack(w[b], u);
        slot_factors<Format>(u, scale, offset);
        const __m256 d = _mm256_set1_ps(a[b].d);
        __m256i products[8];
        for (int k = 0; k < 8; ++k)
            products[k] = Products::of(unpack::load32(u.q + 32 * k), unpack::load32(a[b].qs + 32 * k));
        for (int half = 0; half < 2; ++half) {
            const __m256 sums = _mm256_cvtepi32_ps(slot_sums(products + 4 * half));
            acc[half] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_load_ps(scale + 8 * half), d), sums, acc[half]);
            if constexpr (Format::kOffset) {
                const __m256 bsums = _mm256_cvtepi32_ps(
                    _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a[b].bsums + 8 * half))));
                off[half] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_load_ps(offset + 8 * half), d), bsums, off[half]);
            }
        }
    }
    const float dot = int_simd::reduce8(_mm256_add_ps(acc[0], acc[1]));
    if constexpr (Format::kOffset) return dot + int_simd::reduce8(_mm256_add_ps(off[0], off[1]));
    return dot;
}

}  // namespace
}  // namespace k3::kernels::q8k_simd
