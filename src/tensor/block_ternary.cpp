#include "tensor/block_ternary.h"

#include "tensor/quant_bytes.h"

namespace k3::tensor {

void dequantize_row_tq1_0(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const BlockTq1_0*>(blocks);
    for (int64_t b = 0; b < n / kTernaryBlockSize; ++b, out += kTernaryBlockSize) {
        const float d = load_f16(block[b].d);
        auto value = [d](uint8_t q, int trit) { return float(tq1_trit(q, trit) - 1) * d; };
        for (int t = 0; t < 5; ++t)
            for (int m = 0; m < 32; ++m) out[32 * t + m] = value(block[b].qs[m], t);
        for (int t = 0; t < 5; ++t)
            for (int m = 0; m < 16; ++m) out[160 + 16 * t + m] = value(block[b].qs[32 + m], t);
        for (int t = 0; t < 4; ++t)
            for (int j = 0; j < 4; ++j) out[240 + 4 * t + j] = value(block[b].qh[j], t);
    }
}

void dequantize_row_tq2_0(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const BlockTq2_0*>(blocks);
    for (int64_t b = 0; b < n / kTernaryBlockSize; ++b, out += kTernaryBlockSize) {
        const float d = load_f16(block[b].d);
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 4; ++l)
                for (int m = 0; m < 32; ++m)
                    out[128 * h + 32 * l + m] = float(((block[b].qs[32 * h + m] >> (2 * l)) & 3) - 1) * d;
    }
}

}  // namespace k3::tensor
