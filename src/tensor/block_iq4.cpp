#include "tensor/block_iq4.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/no_fp_contract.h"
#include "tensor/quant_bytes.h"
#include "tensor/quant_search.h"

namespace k3::tensor {
namespace {

// Decodes 32 codes (nibble layout as Q4_0) times the sub-block factor dl.
void decode_codes(const uint8_t* qs, float dl, float* y) {
    for (int j = 0; j < 16; ++j) {
        y[j] = dl * float(kIq4nlValues[qs[j] & 15]);
        y[j + 16] = dl * float(kIq4nlValues[qs[j] >> 4]);
    }
}

void encode_codes(const uint8_t* codes, uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = uint8_t(codes[j] | codes[j + 16] << 4);
}

// The weights of one group of 32: x², or with importance weights importance·sqrt(sigma2 + x²),
// sigma2 = 2·Σx²/N over the N values of the (super-)block, as ggml's quantize_row_iq4_nl_impl.
void group_weights(const float* x, const float* importance, float sigma2, float* w) {
    for (int j = 0; j < 32; ++j) w[j] = importance ? importance[j] * std::sqrt(sigma2 + x[j] * x[j]) : x[j] * x[j];
}
float block_sigma2(const float* x, int n) {
    float sigma2 = 0;
    for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
    return sigma2 * (2.f / float(n));
}

// Best scale for one group of 32 with weights w (ggml quantize_row_iq4_nl_impl, ntry 7): start
// from max/127, then try the 15 scales max/(127 − t), t = −7..7, keeping the weighted
// least-squares scale Σw·q·x / Σw·q² with the largest (Σw·q·x)²/Σw·q². Returns 0 for a group
// below ggml's GROUP_MAX_EPS.
float search_iq4_scale(const float* x, const float* w) {
    constexpr int kTrials = 7;
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    if (amax < 1e-15f) return 0;
    auto fit = [&](float id, float& sumqx, float& sumq2) {
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const float q = kIq4nlValues[nearest_table_index(kIq4nlValues, id * x[j])];
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
    };
    float sumqx, sumq2;
    fit(1 / (-max / kIq4nlValues[0]), sumqx, sumq2);
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int t = -kTrials; t <= kTrials; ++t) {
        fit((t + kIq4nlValues[0]) / max, sumqx, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// Codes of 32 values for the factor dl (0 gives the code of 0 everywhere, as ggml).
void choose_codes(const float* x, float dl, uint8_t* codes) {
    const float idl = dl != 0 ? 1 / dl : 0.f;
    for (int j = 0; j < 32; ++j) codes[j] = uint8_t(nearest_table_index(kIq4nlValues, idl * x[j]));
}

}  // namespace

void dequantize_row_iq4_nl(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const BlockIq4nl*>(blocks);
    for (int64_t b = 0; b < n / kIq4nlBlockSize; ++b)
        decode_codes(block[b].qs, load_f16(block[b].d), out + b * kIq4nlBlockSize);
}

void dequantize_row_iq4_xs(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const BlockIq4xs*>(blocks);
    for (int64_t b = 0; b < n / kIq4xsBlockSize; ++b) {
        const float d = load_f16(block[b].d);
        for (int sub = 0; sub < 8; ++sub)
            decode_codes(block[b].qs + 16 * sub, d * float(iq4xs_sub_scale(block[b], sub)),
                         out + b * kIq4xsBlockSize + 32 * sub);
    }
}

void quantize_row_iq4_nl_weighted(const float* in, void* blocks, int64_t n, const float* importance) {
    auto* block = static_cast<BlockIq4nl*>(blocks);
    for (int64_t b = 0; b < n / kIq4nlBlockSize; ++b) {
        const float* x = in + b * kIq4nlBlockSize;
        float w[32];
        group_weights(x, importance ? importance + b * kIq4nlBlockSize : nullptr,
                      importance ? block_sigma2(x, kIq4nlBlockSize) : 0.f, w);
        const float d = search_iq4_scale(x, w);
        store_f16(block[b].d, d);
        uint8_t codes[32];
        choose_codes(x, d, codes);  // against the unrounded d, as ggml
        encode_codes(codes, block[b].qs);
    }
}

void quantize_row_iq4_xs_weighted(const float* in, void* blocks, int64_t n, const float* importance) {
    auto* block = static_cast<BlockIq4xs*>(blocks);
    for (int64_t b = 0; b < n / kIq4xsBlockSize; ++b) {
        const float* x = in + b * kIq4xsBlockSize;
        const float sigma2 = importance ? block_sigma2(x, kIq4xsBlockSize) : 0.f;
        float scales[8];
        float max_scale = 0, amax_scale = 0;
        for (int sub = 0; sub < 8; ++sub) {
            float w[32];
            group_weights(x + 32 * sub, importance ? importance + b * kIq4xsBlockSize + 32 * sub : nullptr, sigma2, w);
            scales[sub] = search_iq4_scale(x + 32 * sub, w);
            if (std::fabs(scales[sub]) > amax_scale) {
                amax_scale = std::fabs(scales[sub]);
                max_scale = scales[sub];
            }
        }
        // Sub-block scales as 6-bit signed multiples l of d = max_scale / −32; codes are chosen
        // against d·l with the unrounded d.
        const float d = -max_scale / 32;
        store_f16(block[b].d, d);
        const float id = d != 0 ? 1 / d : 0.f;
        unsigned scales_h = 0;
        std::memset(block[b].scales_l, 0, sizeof block[b].scales_l);
        for (int sub = 0; sub < 8; ++sub) {
            const int l = std::clamp(nearest_int(id * scales[sub]), -32, 31);
            uint8_t codes[32];
            choose_codes(x + 32 * sub, d * float(l), codes);
            encode_codes(codes, block[b].qs + 16 * sub);
            const unsigned stored = unsigned(l + 32);
            block[b].scales_l[sub / 2] |= uint8_t((stored & 15) << (4 * (sub % 2)));
            scales_h |= (stored >> 4) << (2 * sub);
        }
        store_u16(block[b].scales_h, uint16_t(scales_h));
    }
}

void quantize_row_iq4_nl(const float* in, void* blocks, int64_t n) { quantize_row_iq4_nl_weighted(in, blocks, n, nullptr); }
void quantize_row_iq4_xs(const float* in, void* blocks, int64_t n) { quantize_row_iq4_xs_weighted(in, blocks, n, nullptr); }

}  // namespace k3::tensor
