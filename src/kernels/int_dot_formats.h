// The 32-element weight formats of the integer kernels, described once: block geometry, where
// the scale (and offset) sit, and the scalar decode of a block to its int8 levels. The scalar
// reference (int_dot_scalar.cpp) and the SIMD kernels (int_dot_simd.h) are written over these.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/activation_quant.h"
#include "kernels/dot.h"
#include "tensor/block_iq4.h"
#include "tensor/block_mxfp4.h"
#include "tensor/float_formats.h"

namespace k3::kernels::int_formats {

inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }
inline uint32_t load_u32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// Element j of a nibble format: low nibble of qs[j] for j < 16, high nibble of qs[j-16] after.
inline int nibble(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }

// Members: kBytes (block size in bytes), kScaleE8M0 (else an f16 scale at byte 0), kOffset
// (an f16 m at byte 2: x = d·q + m), kQsAt (the levels or nibbles), kMaxLevel (the largest |level|
// a block can hold), levels(block, q).
struct Q8_0 {
    static constexpr int kBytes = 34, kQsAt = 2, kMaxLevel = 128;
    static constexpr bool kScaleE8M0 = false, kOffset = false;
    static void levels(const uint8_t* b, int8_t* q) {
        for (int j = 0; j < 32; ++j) q[j] = int8_t(b[kQsAt + j]);
    }
};
struct Mxfp4 {
    static constexpr int kBytes = 17, kQsAt = 1, kMaxLevel = 12;
    static constexpr bool kScaleE8M0 = true, kOffset = false;
    static void levels(const uint8_t* b, int8_t* q) {
        for (int j = 0; j < 32; ++j) q[j] = tensor::kMxfp4Values[nibble(b + kQsAt, j)];
    }
};
struct Q4_0 {
    static constexpr int kBytes = 18, kQsAt = 2, kMaxLevel = 8;
    static constexpr bool kScaleE8M0 = false, kOffset = false;
    static void levels(const uint8_t* b, int8_t* q) {
        for (int j = 0; j < 32; ++j) q[j] = int8_t(nibble(b + kQsAt, j) - 8);
    }
};
struct Iq4Nl {
    static constexpr int kBytes = 18, kQsAt = 2, kMaxLevel = 127;
    static constexpr bool kScaleE8M0 = false, kOffset = false;
    static void levels(const uint8_t* b, int8_t* q) {
        for (int j = 0; j < 32; ++j) q[j] = tensor::kIq4nlValues[nibble(b + kQsAt, j)];
    }
};
struct Q5_0 {
    static constexpr int kBytes = 22, kQhAt = 2, kQsAt = 6, kMaxLevel = 16;
    static constexpr bool kScaleE8M0 = false, kOffset = false;
    static void levels(const uint8_t* b, int8_t* q) {
        const uint32_t qh = load_u32(b + kQhAt);
        for (int j = 0; j < 32; ++j) q[j] = int8_t((nibble(b + kQsAt, j) | ((qh >> j) & 1) << 4) - 16);
    }
};
struct Q4_1 {
    static constexpr int kBytes = 20, kQsAt = 4, kMaxLevel = 15;
    static constexpr bool kScaleE8M0 = false, kOffset = true;
    static void levels(const uint8_t* b, int8_t* q) {
        for (int j = 0; j < 32; ++j) q[j] = int8_t(nibble(b + kQsAt, j));
    }
};
struct Q5_1 {
    static constexpr int kBytes = 24, kQhAt = 4, kQsAt = 8, kMaxLevel = 31;
    static constexpr bool kScaleE8M0 = false, kOffset = true;
    static void levels(const uint8_t* b, int8_t* q) {
        const uint32_t qh = load_u32(b + kQhAt);
        for (int j = 0; j < 32; ++j) q[j] = int8_t(nibble(b + kQsAt, j) | ((qh >> j) & 1) << 4);
    }
};

// The activation block paired with a format: Q8_1 for the offset formats, Q8_0 otherwise.
template <typename Format>
using ActBlock = std::conditional_t<Format::kOffset, ActBlockQ8_1, ActBlockQ8_0>;

// The weight scale d_w of a block (scalar decode; the SIMD kernels use F16C for the same value).
template <typename Format>
float weight_scale(const uint8_t* b) {
    if constexpr (Format::kScaleE8M0) return mxfp4_half_scale(b[0]);
    else return tensor::f16_to_f32(load_u16(b));
}

}  // namespace k3::kernels::int_formats
