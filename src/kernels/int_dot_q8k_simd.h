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

// The scalar kernel's arithmetic for kTokens activation rows (act_stride bytes apart) at once,
// slots 0..7 and 8..15 in two registers per token: each weight block is unpacked once for all.
template <typename Format, typename Products, int kTokens>
void int_dot_tokens(const void* weight_row, const uint8_t* act, size_t act_stride, int64_t n, float* y, int64_t y_stride) {
    const auto* w = static_cast<const typename Format::BlockType*>(weight_row);
    __m256 acc[kTokens][2], off[kTokens][2];
    for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = off[t][0] = off[t][1] = _mm256_setzero_ps();
    unpack::Unpacked u;
    alignas(32) float scale[kQ8KSlots], offset[kQ8KSlots];
    for (int64_t b = 0; b < n / 256; ++b) {
        Format::unpack(w[b], u);
        slot_factors<Format>(u, scale, offset);
        for (int t = 0; t < kTokens; ++t) {
            const ActBlockQ8_K& a = reinterpret_cast<const ActBlockQ8_K*>(act + size_t(t) * act_stride)[b];
            const __m256 d = _mm256_set1_ps(a.d);
            __m256i products[8];
            for (int k = 0; k < 8; ++k) products[k] = Products::of(unpack::load32(u.q + 32 * k), unpack::load32(a.qs + 32 * k));
            for (int half = 0; half < 2; ++half) {
                const __m256 sums = _mm256_cvtepi32_ps(slot_sums(products + 4 * half));
                acc[t][half] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_load_ps(scale + 8 * half), d), sums, acc[t][half]);
                if constexpr (Format::kOffset) {
                    const __m256 bsums = _mm256_cvtepi32_ps(
                        _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums + 8 * half))));
                    off[t][half] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_load_ps(offset + 8 * half), d), bsums, off[t][half]);
                }
            }
        }
    }
    for (int t = 0; t < kTokens; ++t) {
        const float dot = int_simd::reduce8(_mm256_add_ps(acc[t][0], acc[t][1]));
        y[t * y_stride] = Format::kOffset ? dot + int_simd::reduce8(_mm256_add_ps(off[t][0], off[t][1])) : dot;
    }
}

template <typename Format, typename Products>
float int_dot(const void* weight_row, const void* act_row, int64_t n) {
    float y;
    int_dot_tokens<Format, Products, 1>(weight_row, static_cast<const uint8_t*>(act_row), 0, n, &y, 0);
    return y;
}

// Several tokens of one weight row: four tokens at a time, then the last 1-3 together.
template <typename Format, typename Products>
void int_dot_rows(const void* weight_row, const void* act_rows, size_t act_stride, int64_t n_tokens, int64_t n, float* y,
                  int64_t y_stride) {
    const auto* act = static_cast<const uint8_t*>(act_rows);
    int64_t t = 0;
    for (; t + 4 <= n_tokens; t += 4)
        int_dot_tokens<Format, Products, 4>(weight_row, act + t * act_stride, act_stride, n, y + t * y_stride, y_stride);
    const uint8_t* rest = act + t * act_stride;
    float* y_rest = y + t * y_stride;
    switch (n_tokens - t) {
        case 3: int_dot_tokens<Format, Products, 3>(weight_row, rest, act_stride, n, y_rest, y_stride); break;
        case 2: int_dot_tokens<Format, Products, 2>(weight_row, rest, act_stride, n, y_rest, y_stride); break;
        case 1: int_dot_tokens<Format, Products, 1>(weight_row, rest, act_stride, n, y_rest, y_stride); break;
        default: break;
    }
}

// IntDotTileFn: the rows one after another (each block is unpacked once per row and run of
// tokens; a 256-value block is too large to keep several rows' unpacked levels in registers).
template <typename Format, typename Products>
void int_dot_tile(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_rows, size_t act_stride,
                  int64_t n_tokens, int64_t n, float* y, int64_t y_stride) {
    const auto* rows = static_cast<const uint8_t*>(weight_rows);
    for (int64_t r = 0; r < n_rows; ++r)
        int_dot_rows<Format, Products>(rows + size_t(r) * weight_stride, act_rows, act_stride, n_tokens, n, y + r, y_stride);
}

}  // namespace
}  // namespace k3::kernels::q8k_simd
