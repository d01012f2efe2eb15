// Sixteen weight rows in the lanes of a zmm, for the kernels with the rows in the lanes
// (int_dot_simd.h's YmmLanes at twice the width, on simd_avx512.h's f32 vector: RowLanes,
// LaneTiles): each broadcast activation quad and each vpdpbusd serve twice the rows; the panels
// are still decoded eight rows at a time. Include only inside a target region that enables
// avx512f, avx512bw, avx512vl and avx512vnni, after int_dot_simd.h.
#pragma once

#include "kernels/simd_avx512.h"

namespace k3::kernels::int_simd {
namespace {

struct ZmmLanes : simd::Avx512 {
    using I = __m512i;
    static I izero() { return _mm512_setzero_si512(); }
    static I iload(const __m256i* p) { return _mm512_loadu_si512(p); }
    static I ibroadcast(int32_t v) { return _mm512_set1_epi32(v); }
    static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
    static I isub(I a, I b) { return _mm512_sub_epi32(a, b); }
    template <int kShift>
    static I ishift_left(I a) { return _mm512_slli_epi32(a, kShift); }
    static F to_float(I a) { return _mm512_cvtepi32_ps(a); }
    static void store_rows(float* y, F v, int rows) { rows == kWidth ? store(y, v) : store(y, v, tail(rows)); }
    static I dot_unsigned(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
};

}  // namespace
}  // namespace k3::kernels::int_simd
