// AVX2 activation quantisers: the instruction sequence of llama.cpp's x86 build for Q8_0 and
// Q8_1 (arch/x86/quants.c), and its reference arithmetic for Q8_K, 8 lanes at a time. Bit-equal
// to the scalar references of activation_quant.cpp. Only called when CPUID reports AVX2.
#include <immintrin.h>

#include <cstring>

#include "kernels/activation_quant.h"

#define K3_QUANT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace k3::kernels {
namespace {

K3_QUANT_AVX2 inline float max_of(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

K3_QUANT_AVX2 inline int32_t sum_of(__m256i v) {
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1))));
}

// 32 int32 levels -> 32 int8 in element order (the packs interleave 128-bit lanes).
K3_QUANT_AVX2 inline __m256i pack_levels(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// One 32-value block: stores d and the levels, returns Σ levels and the unrounded d.
K3_QUANT_AVX2 inline int32_t quantize_block(const float* x, uint16_t& d_bits, int8_t* qs, float& d) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        amax = k == 0 ? _mm256_andnot_ps(sign, v[0]) : _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
    }
    const float max_abs = max_of(amax);
    d = max_abs / 127.0f;
    d_bits = uint16_t(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    const __m256 id = _mm256_set1_ps(max_abs != 0.0f ? 127.0f / max_abs : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_levels(q[0], q[1], q[2], q[3]));
    return sum_of(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
}

}  // namespace

K3_QUANT_AVX2 void quantize_act_q8_0_avx2(const float* x, void* blocks, int64_t n) {
    auto* out = static_cast<ActBlockQ8_0*>(blocks);
    float d;
    for (int64_t b = 0; b < n / 32; ++b) quantize_block(x + 32 * b, out[b].d, out[b].qs, d);
}

K3_QUANT_AVX2 void quantize_act_q8_1_avx2(const float* x, void* blocks, int64_t n) {
    auto* out = static_cast<ActBlockQ8_1*>(blocks);
    float d;
    for (int64_t b = 0; b < n / 32; ++b) {
        const int32_t sum = quantize_block(x + 32 * b, out[b].d, out[b].qs, d);
        out[b].s = uint16_t(_cvtss_sh(d * float(sum), _MM_FROUND_TO_NEAREST_INT));
    }
}

K3_QUANT_AVX2 void quantize_act_q8_K_avx2(const float* x, void* blocks, int64_t n) {
    auto* out = static_cast<ActBlockQ8_K*>(blocks);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / 256; ++b, x += 256) {
        ActBlockQ8_K& block = out[b];
        __m256 amax = _mm256_setzero_ps();
        for (int k = 0; k < 32; ++k) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
        const float max_abs = max_of(amax);
        if (max_abs == 0.0f) {
            std::memset(&block, 0, sizeof block);
            continue;
        }
        // The reference keeps the first element of largest magnitude, with its sign.
        int first = 0;
        while (first < 255 && __builtin_fabsf(x[first]) != max_abs) ++first;  // (bounded for NaN rows)
        const float iscale = -127.0f / x[first];
        const __m256 scale = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127), ones = _mm256_set1_epi16(1);
        for (int k = 0; k < 8; ++k) {
            __m256i q[4];
            for (int g = 0; g < 4; ++g) {
                const __m256 v = _mm256_mul_ps(scale, _mm256_loadu_ps(x + 32 * k + 8 * g));
                q[g] = _mm256_min_epi32(top, _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
            }
            const __m256i levels = pack_levels(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.qs + 32 * k), levels);
            // Σ per 16: widen to int16 and add pairs, then fold the 8 pair sums of each half.
            const __m256i lo = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(levels)), ones);
            const __m256i hi = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(levels, 1)), ones);
            block.bsums[2 * k] = int16_t(sum_of(lo));
            block.bsums[2 * k + 1] = int16_t(sum_of(hi));
        }
        block.d = 1.0f / iscale;
    }
}

}  // namespace k3::kernels
