#include "tensor/block_mxfp4.h"

#include <bit>
#include <cmath>
#include <string>

#include "util/error.h"

namespace k3::tensor {
namespace {

// Index i in 0..15 minimising |kvalues[i] * d - x|; the first (lowest) index wins ties.
uint8_t nearest_mxfp4_code(float x, float d) {
    uint8_t best = 0;
    float best_error = std::fabs(float(kMxfp4Values[0]) * d - x);
    for (uint8_t i = 1; i < 16; ++i) {
        const float error = std::fabs(float(kMxfp4Values[i]) * d - x);
        if (error < best_error) {
            best = i;
            best_error = error;
        }
    }
    return best;
}

}  // namespace

float e8m0_to_f32_half(uint8_t e) {
    // 0x00200000 = 2^-128 and 0x00400000 = 2^-127 as f32 bit patterns; otherwise exponent e-1.
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

void dequantize_row_mxfp4(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const uint8_t*>(blocks);
    for (int64_t b = 0; b < n / kMxfp4BlockSize; ++b, block += kMxfp4BlockBytes) {
        const float d = e8m0_to_f32_half(block[0]);  // 2^(e-128)
        float* y = out + b * kMxfp4BlockSize;
        for (int j = 0; j < 16; ++j) {
            y[j] = float(kMxfp4Values[block[1 + j] & 15]) * d;
            y[j + 16] = float(kMxfp4Values[block[1 + j] >> 4]) * d;
        }
    }
}

void quantize_row_mxfp4(const float* in, void* blocks, int64_t n) {
    auto* block = static_cast<uint8_t*>(blocks);
    for (int64_t b = 0; b < n / kMxfp4BlockSize; ++b, block += kMxfp4BlockBytes) {
        const float* x = in + b * kMxfp4BlockSize;
        float amax = 0.0f;
        for (int i = 0; i < kMxfp4BlockSize; ++i) amax = std::fmax(amax, std::fabs(x[i]));
        // e = floor(log2(amax)) - 2 + 127 as an unsigned byte; below 2^-125 this is negative and
        // wraps modulo 256 exactly as ggml's float -> uint8_t cast does on x86-64.
        const uint8_t e = amax > 0.0f ? uint8_t(int32_t(std::floor(std::log2(amax)) - 2.0f + 127.0f)) : 0;
        const float d = e8m0_to_f32_half(e);
        block[0] = e;
        for (int j = 0; j < 16; ++j)
            block[1 + j] = uint8_t(nearest_mxfp4_code(x[j], d) | nearest_mxfp4_code(x[j + 16], d) << 4);
    }
}

void validate_mxfp4_blocks(const void* blocks, int64_t n_blocks, std::string_view what) {
    const auto* block = static_cast<const uint8_t*>(blocks);
    for (int64_t b = 0; b < n_blocks; ++b, block += kMxfp4BlockBytes) {
        if (block[0] == 0xFF)
            throw Error(std::string(what) + ": MXFP4 block " + std::to_string(b) +
                        " has E8M0 scale byte 0xFF (NaN); expected an exponent 0..254");
    }
}

}  // namespace k3::tensor
