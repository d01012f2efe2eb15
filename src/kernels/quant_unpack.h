// AVX2 unpacking of the legacy (Q4_0..Q5_1), K (Q2_K..Q6_K) and IQ4 block formats into one
// common shape: integer levels plus, per sub-block, a scale and an offset, so that
//     value[i] = scale[s]·q[i] (+ offset[s])        for element i of sub-block s,
// with exactly the two f32 roundings of the scalar decoders in src/tensor/ (the offset is the
// negated min where those compute a·q − m, which IEEE defines as a·q + (−m)).
// The decoders (dequant_avx2.cpp) and the dot kernels (AVX2 and AVX-512) are written once over
// this shape; a format only says how to unpack its block. Included only by kernel .cpp files
// that check CPUID before calling.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tensor/block_iq4.h"
#include "tensor/block_kquants.h"
#include "tensor/block_legacy.h"
#include "tensor/quant_bytes.h"

#define K3_UNPACK_AVX2 __attribute__((target("avx2")))

namespace k3::kernels::unpack {

struct Unpacked {
    alignas(32) int8_t q[256];   // levels of one block, element order
    float scale[16], offset[16];  // per sub-block
};

K3_UNPACK_AVX2 inline void store32(int8_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
K3_UNPACK_AVX2 inline __m256i load32(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 16 bytes of nibbles -> 32 levels: low nibbles (elements 0..15) in the low lane, high in the high lane.
K3_UNPACK_AVX2 inline __m256i nibbles_of_16(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), mask), _mm_and_si128(v, mask));
}

// 0xFF in byte j where bit j of `bits` is set (32 bits -> 32 bytes).
K3_UNPACK_AVX2 inline __m256i bytes_of_bits(uint32_t bits) {
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(int32_t(bits)), pick);
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// 0xFF in byte l where bit `bit` of bytes[l] is set.
K3_UNPACK_AVX2 inline __m256i bit_set(__m256i bytes, int bit) {
    const __m256i mask = _mm256_set1_epi8(char(1 << bit));
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, mask), mask);
}

// The 2-bit fields of Q2_K/Q3_K: element 128h + 32s + l from bits 2s of qs[32h + l].
K3_UNPACK_AVX2 inline void unpack_two_bit(const uint8_t* qs, int8_t* q) {
    const __m256i three = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
        const __m256i v = load32(qs + 32 * half);
        for (int s = 0; s < 4; ++s)
            store32(q + 128 * half + 32 * s, _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * s)), three));
    }
}

// Each format: block type, elements per block and per sub-block, whether sub-blocks have an
// offset, and unpack().

template <int Bits, bool kHasOffset, typename Block>
struct LegacyFormat {  // Q4_0, Q4_1, Q5_0, Q5_1: one sub-block of 32
    using BlockType = Block;
    static constexpr int kBlockSize = 32, kSubSize = 32;
    static constexpr bool kOffset = kHasOffset;
    K3_UNPACK_AVX2 static void unpack(const Block& block, Unpacked& u) {
        __m256i levels = nibbles_of_16(block.qs);
        if constexpr (Bits == 5) {
            uint32_t qh;
            std::memcpy(&qh, block.qh, 4);
            levels = _mm256_or_si256(levels, _mm256_and_si256(bytes_of_bits(qh), _mm256_set1_epi8(16)));
        }
        u.scale[0] = tensor::load_f16(block.d);
        if constexpr (kHasOffset) {
            u.offset[0] = tensor::load_f16(block.m);  // x = d·q + m
        } else {
            levels = _mm256_sub_epi8(levels, _mm256_set1_epi8(char(1 << (Bits - 1))));  // x = d·(q − 2^(Bits−1))
        }
        store32(u.q, levels);
    }
};

struct Q2KFormat {
    using BlockType = tensor::BlockQ2_K;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = true;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        unpack_two_bit(block.qs, u.q);
        const float d = tensor::load_f16(block.d), dmin = tensor::load_f16(block.dmin);
        for (int s = 0; s < 16; ++s) {
            u.scale[s] = d * float(block.scales[s] & 15);      // x = d·sc·q − dmin·m
            u.offset[s] = -(dmin * float(block.scales[s] >> 4));
        }
    }
};

struct Q3KFormat {
    using BlockType = tensor::BlockQ3_K;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        unpack_two_bit(block.qs, u.q);
        // Element 32g + l loses 4 unless bit g of hmask[l] is set.
        const __m256i hmask = load32(block.hmask), four = _mm256_set1_epi8(4);
        for (int g = 0; g < 8; ++g)
            store32(u.q + 32 * g, _mm256_sub_epi8(load32(u.q + 32 * g), _mm256_andnot_si256(bit_set(hmask, g), four)));
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 16; ++s) u.scale[s] = d * float(tensor::unpack_scale_q3_k(block.scales, s));
    }
};

template <int Bits, typename Block>
struct Q45KFormat {  // Q4_K, Q5_K: eight sub-blocks of 32
    using BlockType = Block;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = true;
    K3_UNPACK_AVX2 static void unpack(const Block& block, Unpacked& u) {
        // Element 64c + l: low nibble of qs[32c + l]; 64c + 32 + l: its high nibble.
        const __m256i mask = _mm256_set1_epi8(15);
        for (int c = 0; c < 4; ++c) {
            const __m256i v = load32(block.qs + 32 * c);
            store32(u.q + 64 * c, _mm256_and_si256(v, mask));
            store32(u.q + 64 * c + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), mask));
        }
        if constexpr (Bits == 5) {  // element 32s + l: +16 if bit s of qh[l]
            const __m256i qh = load32(block.qh), sixteen = _mm256_set1_epi8(16);
            for (int s = 0; s < 8; ++s)
                store32(u.q + 32 * s, _mm256_or_si256(load32(u.q + 32 * s), _mm256_and_si256(bit_set(qh, s), sixteen)));
        }
        const float d = tensor::load_f16(block.d), dmin = tensor::load_f16(block.dmin);
        for (int s = 0; s < 8; ++s) {
            const tensor::ScaleMin sm = tensor::unpack_scale_min_k4(block.scales, s);
            u.scale[s] = d * float(sm.scale);
            u.offset[s] = -(dmin * float(sm.min));
        }
    }
};

struct Q6KFormat {
    using BlockType = tensor::BlockQ6_K;
    static constexpr int kBlockSize = 256, kSubSize = 16;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const __m256i low4 = _mm256_set1_epi8(15), bits45 = _mm256_set1_epi8(0x30), bias = _mm256_set1_epi8(32);
        for (int half = 0; half < 2; ++half) {
            const __m256i ql0 = load32(block.ql + 64 * half), ql1 = load32(block.ql + 64 * half + 32);
            const __m256i qh = load32(block.qh + 32 * half);
            // Group g (elements 128·half + 32g + l): 4 low bits from ql, bits 2g..2g+1 of qh moved to bits 4..5.
            const __m256i high[4] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45),
                                     _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45), _mm256_and_si256(qh, bits45),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)};
            const __m256i low[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                                    _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                    _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
            for (int g = 0; g < 4; ++g)
                store32(u.q + 128 * half + 32 * g, _mm256_sub_epi8(_mm256_or_si256(low[g], high[g]), bias));
        }
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 16; ++s) u.scale[s] = d * float(block.scales[s]);  // x = (d·sc)·(q − 32)
    }
};

// 32 IQ4 codes (nibble layout as Q4_0) -> their table values.
K3_UNPACK_AVX2 inline void iq4_values(const uint8_t* qs, int8_t* q) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tensor::kIq4nlValues));
    store32(q, _mm256_shuffle_epi8(_mm256_set_m128i(table, table), nibbles_of_16(qs)));
}

struct Iq4nlFormat {
    using BlockType = tensor::BlockIq4nl;
    static constexpr int kBlockSize = 32, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        iq4_values(block.qs, u.q);
        u.scale[0] = tensor::load_f16(block.d);
    }
};

struct Iq4xsFormat {
    using BlockType = tensor::BlockIq4xs;
    static constexpr int kBlockSize = 256, kSubSize = 32;
    static constexpr bool kOffset = false;
    K3_UNPACK_AVX2 static void unpack(const BlockType& block, Unpacked& u) {
        const float d = tensor::load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            iq4_values(block.qs + 16 * s, u.q + 32 * s);
            u.scale[s] = d * float(tensor::iq4xs_sub_scale(block, s));
        }
    }
};

// Calls f.template operator()<Format>() for the format of `type`; returns f's result, or
// `none` for a type without an unpacker.
template <typename Result, typename F>
Result with_format(tensor::Type type, Result none, F&& f) {
    using T = tensor::Type;
    using namespace tensor;
    switch (type) {
        case T::Q4_0: return f.template operator()<LegacyFormat<4, false, BlockQ4_0>>();
        case T::Q4_1: return f.template operator()<LegacyFormat<4, true, BlockQ4_1>>();
        case T::Q5_0: return f.template operator()<LegacyFormat<5, false, BlockQ5_0>>();
        case T::Q5_1: return f.template operator()<LegacyFormat<5, true, BlockQ5_1>>();
        case T::Q2_K: return f.template operator()<Q2KFormat>();
        case T::Q3_K: return f.template operator()<Q3KFormat>();
        case T::Q4_K: return f.template operator()<Q45KFormat<4, BlockQ4_K>>();
        case T::Q5_K: return f.template operator()<Q45KFormat<5, BlockQ5_K>>();
        case T::Q6_K: return f.template operator()<Q6KFormat>();
        case T::IQ4_NL: return f.template operator()<Iq4nlFormat>();
        case T::IQ4_XS: return f.template operator()<Iq4xsFormat>();
        default: return none;
    }
}

}  // namespace k3::kernels::unpack
