// Sixteen weight rows in the lanes of a zmm, for the kernels with the rows in the lanes
// (int_dot_simd.h's YmmLanes at twice the width: RowLanes, LaneTiles): each broadcast activation
// quad and each vpdpbusd serve twice the rows; the panels are still decoded eight rows at a time.
// Include only inside a target region that enables avx512f and avx512vnni, after int_dot_simd.h.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace k3::kernels::int_simd {
namespace {

struct ZmmLanes {
    using I = __m512i;
    using F = __m512;
    static constexpr int kRows = 16;
    static I zero() { return _mm512_setzero_si512(); }
    static F fzero() { return _mm512_setzero_ps(); }
    static I load(const __m256i* p) { return _mm512_loadu_si512(p); }
    static F loadf(const __m256* p) { return _mm512_loadu_ps(p); }
    static I broadcast(int32_t v) { return _mm512_set1_epi32(v); }
    static F fbroadcast(float v) { return _mm512_set1_ps(v); }
    static I add(I a, I b) { return _mm512_add_epi32(a, b); }
    static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
    template <int kShift>
    static I shift_left(I a) { return _mm512_slli_epi32(a, kShift); }
    static F fadd(F a, F b) { return _mm512_add_ps(a, b); }
    static F fsub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F to_float(I a) { return _mm512_cvtepi32_ps(a); }
    static I dot_unsigned(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }  // VNNI
    static void store(float* y, F v, int rows) { _mm512_mask_storeu_ps(y, __mmask16((1u << rows) - 1), v); }
};

}  // namespace
}  // namespace k3::kernels::int_simd
