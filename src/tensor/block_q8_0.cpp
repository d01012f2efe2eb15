#include "tensor/block_q8_0.h"

#include <cmath>
#include <cstring>

#include "tensor/float_formats.h"

namespace k3::tensor {

void dequantize_row_q8_0(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(blocks);
    for (int64_t b = 0; b < n / kQ8_0BlockSize; ++b, block += kQ8_0BlockBytes) {
        uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        const float d = f16_to_f32(d_bits);
        const auto* q = reinterpret_cast<const int8_t*>(block + 2);
        for (int i = 0; i < kQ8_0BlockSize; ++i) out[b * kQ8_0BlockSize + i] = float(q[i]) * d;  // d * q[i]
    }
}

void quantize_row_q8_0(const float* in, void* blocks, int64_t n) {
    auto* block = static_cast<uint8_t*>(blocks);
    for (int64_t b = 0; b < n / kQ8_0BlockSize; ++b, block += kQ8_0BlockBytes) {
        const float* x = in + b * kQ8_0BlockSize;
        float amax = 0.0f;
        for (int i = 0; i < kQ8_0BlockSize; ++i) amax = std::fmax(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;              // d = amax / 127
        const float id = d != 0.0f ? 1.0f / d : 0.0f;  // id = 1/d (f32, not the f16-rounded d)
        const uint16_t d_bits = f32_to_f16(d);
        std::memcpy(block, &d_bits, 2);
        auto* q = reinterpret_cast<int8_t*>(block + 2);
        for (int i = 0; i < kQ8_0BlockSize; ++i) q[i] = int8_t(std::roundf(x[i] * id));  // half away from zero
    }
}

}  // namespace k3::tensor
