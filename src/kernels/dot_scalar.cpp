// Scalar reference kernels: the plain definition every SIMD kernel is tested against. Products
// are summed in double (a product of two floats is exact there). One float running sum over a
// row lost accuracy that the SIMD levels' lanes and fused multiply-adds keep: a tiny-k3 sequence
// replayed from a checkpoint came 1.7e-4 from the same sequence computed cold at this level (the
// limit is 1e-4; the SIMD levels: at most 7.2e-5), and 1.0e-4 with eight float lanes; 7.1e-5 in
// double.
#include <cstring>

#include "kernels/dot.h"
#include "tensor/float_formats.h"

namespace k3::kernels {
namespace {

float dot_f32_scalar(const float* a, const float* b, int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(a[i]) * b[i];
    return float(sum);
}

void axpy_f32_scalar(float alpha, const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

float dot_row_f32(const void* row, const float* x, int64_t n) {
    return dot_f32_scalar(static_cast<const float*>(row), x, n);
}

float dot_row_f16(const void* row, const float* x, int64_t n) {
    const auto* w = static_cast<const uint16_t*>(row);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(tensor::f16_to_f32(w[i])) * x[i];
    return float(sum);
}

float dot_row_bf16(const void* row, const float* x, int64_t n) {
    const auto* w = static_cast<const uint16_t*>(row);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(tensor::bf16_to_f32(w[i])) * x[i];
    return float(sum);
}

// Q8_0 block (34 bytes): f16 d, int8 q[32]; value = d * q.
float dot_row_q8_0(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i += 32, block += 34) {
        uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        const float d = tensor::f16_to_f32(d_bits);
        const auto* q = reinterpret_cast<const int8_t*>(block + 2);
        for (int j = 0; j < 32; ++j) sum += double(d * float(q[j])) * x[i + j];
    }
    return float(sum);
}

// MXFP4 block (17 bytes): E8M0 e, qs[16] with element j in the low nibble of qs[j] and element
// j+16 in the high nibble; value = kvalues[code] * 2^(e-128).
float dot_row_mxfp4(const void* row, const float* x, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(row);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i += 32, block += 17) {
        const float d = mxfp4_half_scale(block[0]);
        for (int j = 0; j < 16; ++j) {
            sum += double(d * float(kMxfp4DoubledValues[block[1 + j] & 15])) * x[i + j];
            sum += double(d * float(kMxfp4DoubledValues[block[1 + j] >> 4])) * x[i + j + 16];
        }
    }
    return float(sum);
}

}  // namespace

const IsaDotKernels& scalar_dot_kernels() {
    static const IsaDotKernels k{dot_row_f32, dot_row_f16, dot_row_bf16, dot_row_q8_0,
                                 dot_row_mxfp4, dot_f32_scalar, axpy_f32_scalar};
    return k;
}

}  // namespace k3::kernels
