#include "tensor/block_ternary.h"

#include <algorithm>
#include <cmath>

#include "tensor/quant_bytes.h"

namespace k3::tensor {
namespace {

// d = max |x| of the block; the trit of x is round-half-away(x/d) + 1 (ggml's lroundf).
float ternary_scale(const float* x) {
    float amax = 0.0f;
    for (int j = 0; j < kTernaryBlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
    return amax;
}
int trit_of(float x, float inverse_scale) { return int(std::lround(x * inverse_scale)) + 1; }

// The byte holding trits t[0..4] (t[0] most significant): ⌈256·q/243⌉ of their base-3 number q.
uint8_t pack_trits(const int* trits) {
    unsigned q = 0;
    for (int i = 0; i < 5; ++i) q = q * 3 + unsigned(trits[i]);
    return uint8_t((q * 256 + 242) / 243);
}

}  // namespace

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

void quantize_row_tq1_0(const float* in, void* blocks, int64_t n) {
    auto* block = static_cast<BlockTq1_0*>(blocks);
    for (int64_t b = 0; b < n / kTernaryBlockSize; ++b, in += kTernaryBlockSize) {
        const float d = ternary_scale(in);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        store_f16(block[b].d, d);
        int trits[5];
        for (int m = 0; m < 32; ++m) {
            for (int t = 0; t < 5; ++t) trits[t] = trit_of(in[32 * t + m], id);
            block[b].qs[m] = pack_trits(trits);
        }
        for (int m = 0; m < 16; ++m) {
            for (int t = 0; t < 5; ++t) trits[t] = trit_of(in[160 + 16 * t + m], id);
            block[b].qs[32 + m] = pack_trits(trits);
        }
        for (int j = 0; j < 4; ++j) {
            for (int t = 0; t < 4; ++t) trits[t] = trit_of(in[240 + 4 * t + j], id);
            trits[4] = 0;  // four values: the fifth, least significant trit is 0
            block[b].qh[j] = pack_trits(trits);
        }
    }
}

void quantize_row_tq2_0(const float* in, void* blocks, int64_t n) {
    auto* block = static_cast<BlockTq2_0*>(blocks);
    for (int64_t b = 0; b < n / kTernaryBlockSize; ++b, in += kTernaryBlockSize) {
        const float d = ternary_scale(in);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        store_f16(block[b].d, d);
        for (int h = 0; h < 2; ++h)
            for (int m = 0; m < 32; ++m) {
                unsigned q = 0;
                for (int l = 0; l < 4; ++l) q |= unsigned(trit_of(in[128 * h + 32 * l + m], id) & 3) << (2 * l);
                block[b].qs[32 * h + m] = uint8_t(q);
            }
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
