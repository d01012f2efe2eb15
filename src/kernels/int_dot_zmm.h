// The AVX-512 VNNI level of int_dot_simd.h's kernels: decode's groups in 512-bit registers and
// the Level, shared by int_dot_avx512.cpp and, with kVbmi (AVX-512 VBMI's byte permutes for the
// 4-bit codes), int_dot_avx512_vbmi.cpp. Include only inside a target region that enables
// avx512f, avx512bw, avx512vl, avx512vnni (and avx512vbmi for kVbmi), after int_dot_simd.h.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

namespace k3::kernels {
namespace {

// Decode's groups of the 4-bit code formats (int_simd::YmmNibbleGroups' contract) four blocks per
// register: a zmm of four blocks' codes splits into their low and high nibbles, one vpdpbusd
// each against the activations in the same order, and the two registers of four blocks' partial
// sums fold into eight totals. Half the instructions of two blocks per ymm.
template <typename F, int kBias, bool kVbmi>
struct ZmmNibbleGroups {
    struct Acts {
        __m512i low[2], high[2];  // blocks 4h..4h + 3: elements 0..15 (low), 16..31 (high), a block per 128-bit lane
    };
    static Acts acts(const __m256i (&qs)[8]) {
        Acts a;
        for (int h = 0; h < 2; ++h) {
            const __m256i* q = qs + 4 * h;
            a.low[h] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(q[0], q[1], 0x20)),
                                          _mm256_permute2x128_si256(q[2], q[3], 0x20), 1);
            a.high[h] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(q[0], q[1], 0x31)),
                                           _mm256_permute2x128_si256(q[2], q[3], 0x31), 1);
        }
        return a;
    }
    static __m512i biased(__m512i codes) {
        if constexpr (int_simd::kTableCodes<F>) {
            const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(int_simd::biased_code_table<F, kBias>()));
            return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), codes);
        } else {
            return codes;
        }
    }
    // With VBMI, byte 16k + i of blocks 4h..4h + 3's codes is vpermt2b's pick from two 64-byte
    // loads: (wb, wb + 64) for h = 0, (wb + 64, wb + kTail) for h = 1 (three loads and two
    // permutes where the blocks took eight loads and six inserts).
    static constexpr int kTail = 8 * F::kBytes - 64;
    alignas(64) static constexpr auto kCodeIndex = [] {
        std::array<std::array<uint8_t, 64>, 2> index{};
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 4; ++k)
                for (int i = 0; i < 16; ++i) {
                    const int at = (4 * h + k) * F::kBytes + F::kQsAt + i;
                    index[size_t(h)][size_t(16 * k + i)] = uint8_t(h == 0 ? at : at < 128 ? at - 64 : 64 + at - kTail);
                }
        return index;
    }();
    // And the biased table four times over, so that vpermb's six index bits look a code up
    // whatever the two bits above its nibble hold (no mask).
    alignas(64) static constexpr auto kTable64 = [] {
        std::array<int8_t, 64> table{};
        if constexpr (int_simd::kTableCodes<F>)
            for (int i = 0; i < 64; ++i) table[size_t(i)] = int_simd::biased_code_table<F, kBias>()[i & 15];
        return table;
    }();
    // Blocks 4h..4h + 3's codes, a block per 128-bit lane.
    static __m512i codes(const uint8_t* wb, int h) {
        if constexpr (kVbmi) {
            static_assert(4 * F::kBytes + F::kQsAt >= 64 && 8 * F::kBytes >= 128 && kTail <= 128);
            const __m512i index = _mm512_load_si512(kCodeIndex[size_t(h)].data());
            const __m512i middle = _mm512_loadu_si512(wb + 64);
            return h == 0 ? _mm512_permutex2var_epi8(_mm512_loadu_si512(wb), index, middle)
                          : _mm512_permutex2var_epi8(middle, index, _mm512_loadu_si512(wb + kTail));
        } else {
            const uint8_t* qs = wb + 4 * h * F::kBytes + F::kQsAt;
            __m512i q = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
            q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + F::kBytes)), 1);
            q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 2 * F::kBytes)), 2);
            return _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 3 * F::kBytes)), 3);
        }
    }
    // Codes (any bits above the nibble) as biased levels.
    static __m512i biased_nibbles(__m512i codes) {
        if constexpr (kVbmi && int_simd::kTableCodes<F>) return _mm512_permutexvar_epi8(codes, _mm512_load_si512(kTable64.data()));
        else return biased(_mm512_and_si512(codes, _mm512_set1_epi8(15)));
    }
    template <int kTokens>
    static void token_totals(const uint8_t* wb, const Acts* const (&a)[kTokens], __m256i (&totals)[kTokens]) {
        __m512i sums[kTokens][2];
        for (int h = 0; h < 2; ++h) {
            const __m512i q = codes(wb, h);
            const __m512i low = biased_nibbles(q), high = biased_nibbles(_mm512_srli_epi16(q, 4));
            for (int t = 0; t < kTokens; ++t)
                sums[t][h] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), low, a[t]->low[h]), high, a[t]->high[h]);
        }
        for (int t = 0; t < kTokens; ++t) {
            // 128-bit lane k: block k's total in dword 0 and 2, block 4 + k's in 1 and 3.
            const __m512i halves = _mm512_add_epi32(_mm512_unpacklo_epi32(sums[t][0], sums[t][1]), _mm512_unpackhi_epi32(sums[t][0], sums[t][1]));
            const __m512i both = _mm512_add_epi32(halves, _mm512_shuffle_epi32(halves, _MM_PERM_BADC));
            totals[t] = _mm512_castsi512_si256(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), both));
        }
    }
    // The eight scales from the group's first 128 bytes by one word permute (block k's scale at
    // byte k·kBytes; an E8M0 byte at an odd address is its word's high byte), where they all lie
    // there (not Q4_1's).
    static __m256 scales(const uint8_t* wb) {
        if constexpr (7 * F::kBytes + 2 > 128 || F::kOffset) {
            return int_simd::weight_scales<F>(wb, 8);
        } else {
            // Block k's scale word: to word 2k (a dword lane) for E8M0's bytes, word k for f16.
            alignas(64) static constexpr auto kWordOf = [] {
                std::array<int16_t, 32> index{};
                for (int k = 0; k < 8; ++k) index[size_t(F::kScaleE8M0 ? 2 * k : k)] = int16_t(k * F::kBytes / 2);
                return index;
            }();
            const __m512i words = _mm512_permutex2var_epi16(_mm512_loadu_si512(wb), _mm512_load_si512(kWordOf.data()),
                                                            _mm512_loadu_si512(wb + 64));
            if constexpr (F::kScaleE8M0) {
                const __m256i odd = _mm256_setr_epi32(0, 8 * (F::kBytes % 2), 0, 8 * (F::kBytes % 2), 0, 8 * (F::kBytes % 2), 0, 8 * (F::kBytes % 2));
                const __m256i e = _mm256_and_si256(_mm256_srlv_epi32(_mm512_castsi512_si256(words), odd), _mm256_set1_epi32(255));
                // mxfp4_half_scale: 2^(e - 128), subnormal below e = 2 (MXCSR keeps them).
                return _mm256_scalef_ps(_mm256_set1_ps(1.0f), _mm256_sub_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(128.0f)));
            } else {
                return _mm256_cvtph_ps(_mm512_castsi512_si128(words));
            }
        }
    }
};

// Decode's groups of Q8_0 (the same contract, kBias 128: the levels as unsigned bytes) two blocks
// per zmm, and the eight f16 scales by two word permutes of the group's first 256 bytes.
template <int kBias>
struct ZmmQ8Groups {
    using F = int_formats::Q8_0;
    static_assert(kBias == 128);
    struct Acts {
        __m512i pair[4];  // blocks 2i, 2i + 1
    };
    static Acts acts(const __m256i (&qs)[8]) {
        Acts a;
        for (int i = 0; i < 4; ++i) a.pair[i] = _mm512_inserti64x4(_mm512_castsi256_si512(qs[2 * i]), qs[2 * i + 1], 1);
        return a;
    }
    template <int kTokens>
    static void token_totals(const uint8_t* wb, const Acts* const (&a)[kTokens], __m256i (&totals)[kTokens]) {
        __m512i p[kTokens][4];
        for (int i = 0; i < 4; ++i) {
            const uint8_t* q = wb + 2 * i * F::kBytes + F::kQsAt;
            const __m512i levels = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q))),
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + F::kBytes)), 1);
            const __m512i biased = _mm512_xor_si512(levels, _mm512_set1_epi8(char(0x80)));
            for (int t = 0; t < kTokens; ++t) p[t][i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), biased, a[t]->pair[i]);
        }
        for (int t = 0; t < kTokens; ++t) {
            // 128-bit lane L of u: lane L's sum of p[0..3] in dwords 0..3; adjacent lanes make blocks.
            const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(p[t][0], p[t][1]), _mm512_unpackhi_epi32(p[t][0], p[t][1]));
            const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(p[t][2], p[t][3]), _mm512_unpackhi_epi32(p[t][2], p[t][3]));
            const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
            const __m512i v = _mm512_add_epi32(u, _mm512_shuffle_i32x4(u, u, _MM_SHUFFLE(2, 3, 0, 1)));  // lane 0: blocks 0,2,4,6; lane 2: 1,3,5,7
            totals[t] = _mm512_castsi512_si256(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 0, 0, 0, 0, 0, 0, 0), v));
        }
    }
    static __m256 scales(const uint8_t* wb) {
        // Block k's f16 at word 17k: words 0, 17, 34, 51 of the first 128 bytes, 4, 21, 38, 55 of the next.
        const __m512i index = _mm512_setr_epi32(17 << 16, (51 << 16) | 34, (21 << 16) | 4, (55 << 16) | 38, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        const __m512i first = _mm512_permutex2var_epi16(_mm512_loadu_si512(wb), index, _mm512_loadu_si512(wb + 64));
        const __m512i second = _mm512_permutex2var_epi16(_mm512_loadu_si512(wb + 128), index, _mm512_loadu_si512(wb + 192));
        return _mm256_cvtph_ps(_mm_blend_epi32(_mm512_castsi512_si128(first), _mm512_castsi512_si128(second), 0b1100));
    }
};

// The 256-bit form (AVX-512 VL): one vpdpbusd per block replaces maddubs + madd. (In the
// multi-token tiles two blocks per 512-bit register measured slower: the inserts and mask moves
// cost more than they save; decode's groups above gain from the wider registers.
// In the row and tile kernels, offsetting the activations to unsigned instead of the sign step
// measured slower too: the offset's correction costs a horizontal sum per weight block. Biasing
// the weights' levels instead costs one correction per token and group, shared by every row:
// decode's tiles and the lane kernels do that, DecodeLevels and LanesBlock.)
template <bool kVbmi>
struct Avx512VnniLevelOf {
    struct Weight {
        __m256i w, magnitude;
    };
    static Weight weight(__m256i levels) { return {levels, _mm256_sign_epi8(levels, levels)}; }
    static constexpr bool kPairSums = false;  // vpdpbusd has none
    static __m256i product(const Weight& w, __m256i a) {
        return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w.magnitude, _mm256_sign_epi8(a, w.w));
    }
    // The product of unsigned (biased) levels (decode's tiles).
    static __m256i unsigned_product(__m256i u, __m256i a) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a); }
    static __m256i add_unsigned_product(__m256i acc, __m256i u, __m256i a) { return _mm256_dpbusd_epi32(acc, u, a); }
    template <typename F, int kBias>
    using DecodeGroups = std::conditional_t<std::is_same_v<F, int_formats::Q8_0>, ZmmQ8Groups<kBias>,
                                            std::conditional_t<int_simd::kNibbleCodes<F, kBias>, ZmmNibbleGroups<F, kBias, kVbmi>, void>>;
};
using Avx512VnniLevel = Avx512VnniLevelOf<false>;

}  // namespace
}  // namespace k3::kernels
