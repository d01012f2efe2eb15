// Scalar float formats stored in GGUF: IEEE half (F16) and bfloat16 (BF16), with the exact
// rounding ggml uses, plus row conversions for every plain scalar type (F32, F16, BF16, I8..F64).
#pragma once

#include <bit>
#include <cstdint>

namespace k3::tensor {

// IEEE binary16 -> binary32, exact (subnormals, inf and NaN preserved).
inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1f;
    const uint32_t mantissa = h & 0x3ff;
    if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
    // Subnormal half: mantissa * 2^-24 is exact in f32.
    const float magnitude = float(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
}

// binary32 -> binary16, round to nearest even; overflow gives inf, NaN stays NaN (quiet).
inline uint16_t f32_to_f16(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
    const uint32_t abs_bits = bits & 0x7fffffff;
    if (abs_bits > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((abs_bits >> 13) & 0x3ff));  // NaN
    if (abs_bits >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
    if (abs_bits < 0x38800000u) {
        // Result is a half subnormal (or zero): value / 2^-24, rounded to nearest even.
        // Below 2^-25 everything rounds to zero (2^-25 itself is a tie that goes to even 0).
        if (abs_bits < 0x33000000u) return sign;
        const uint32_t exponent = abs_bits >> 23;           // biased f32 exponent, 102..112
        const uint32_t mantissa = (abs_bits & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - exponent;              // 14..24: bits dropped to reach 2^-24 units
        uint32_t half = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1))) ++half;
        return uint16_t(sign | half);
    }
    // Normal half: rebias the exponent and round the 13 dropped mantissa bits to nearest even
    // (a carry into the exponent is the correct result).
    uint32_t half = ((abs_bits - 0x38000000u) >> 13);
    const uint32_t rest = abs_bits & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
    return uint16_t(sign | half);
}

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// binary32 -> bfloat16 as ggml rounds it: nearest even, NaN forced quiet, no flush to zero.
inline uint16_t f32_to_bf16(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    if ((bits & 0x7fffffff) > 0x7f800000u) return uint16_t((bits >> 16) | 64);
    return uint16_t((bits + (0x7fff + ((bits >> 16) & 1))) >> 16);
}

// Row conversions (n elements); the signatures match tensor::DequantizeRow / QuantizeRow.
void dequantize_row_f32(const void* in, float* out, int64_t n);
void quantize_row_f32(const float* in, void* out, int64_t n);
void dequantize_row_f16(const void* in, float* out, int64_t n);
void quantize_row_f16(const float* in, void* out, int64_t n);
void dequantize_row_bf16(const void* in, float* out, int64_t n);
void quantize_row_bf16(const float* in, void* out, int64_t n);
void dequantize_row_i8(const void* in, float* out, int64_t n);
void dequantize_row_i16(const void* in, float* out, int64_t n);
void dequantize_row_i32(const void* in, float* out, int64_t n);
void dequantize_row_i64(const void* in, float* out, int64_t n);
void dequantize_row_f64(const void* in, float* out, int64_t n);

}  // namespace k3::tensor
