#include "tensor/float_formats.h"

#include <cstring>

namespace k3::tensor {
namespace {

// Reads element i of a little-endian array of T without assuming alignment (GGUF data is only
// aligned to general.alignment, and row views may start anywhere).
template <typename T>
T load(const void* base, int64_t i) {
    T v;
    std::memcpy(&v, static_cast<const uint8_t*>(base) + i * int64_t(sizeof(T)), sizeof(T));
    return v;
}

template <typename T>
void widen_row(const void* in, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = float(load<T>(in, i));
}

}  // namespace

void dequantize_row_f32(const void* in, float* out, int64_t n) { std::memcpy(out, in, size_t(n) * 4); }
void quantize_row_f32(const float* in, void* out, int64_t n) { std::memcpy(out, in, size_t(n) * 4); }

void dequantize_row_f16(const void* in, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(load<uint16_t>(in, i));
}

void quantize_row_f16(const float* in, void* out, int64_t n) {
    auto* dst = static_cast<uint8_t*>(out);
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(in[i]);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

void dequantize_row_bf16(const void* in, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load<uint16_t>(in, i));
}

void quantize_row_bf16(const float* in, void* out, int64_t n) {
    auto* dst = static_cast<uint8_t*>(out);
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(in[i]);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

void dequantize_row_i8(const void* in, float* out, int64_t n) { widen_row<int8_t>(in, out, n); }
void dequantize_row_i16(const void* in, float* out, int64_t n) { widen_row<int16_t>(in, out, n); }
void dequantize_row_i32(const void* in, float* out, int64_t n) { widen_row<int32_t>(in, out, n); }
void dequantize_row_i64(const void* in, float* out, int64_t n) { widen_row<int64_t>(in, out, n); }
void dequantize_row_f64(const void* in, float* out, int64_t n) { widen_row<double>(in, out, n); }

}  // namespace k3::tensor
