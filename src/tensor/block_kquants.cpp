#include "tensor/block_kquants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/no_fp_contract.h"
#include "tensor/quant_bytes.h"
#include "tensor/quant_search.h"

namespace k3::tensor {
namespace {

constexpr int kQK = kSuperBlockSize;

// ---- Decoding. Each value is computed in f32 exactly as ggml orders it: the sub-block factors
// d·scale and dmin·min first, then factor·q − min_factor.

// The 2-bit field of element j (0..255) in Q2_K/Q3_K qs: byte 32·(j/128) + j%32, bits 2·((j%128)/32).
inline int two_bit_level(const uint8_t* qs, int j) {
    return (qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
}

void dequantize_q2_k_block(const BlockQ2_K& block, float* y) {
    const float d = load_f16(block.d), dmin = load_f16(block.dmin);
    for (int sub = 0; sub < 16; ++sub) {
        const float dl = d * float(block.scales[sub] & 15);
        const float ml = dmin * float(block.scales[sub] >> 4);
        for (int j = 16 * sub; j < 16 * sub + 16; ++j) y[j] = dl * float(two_bit_level(block.qs, j)) - ml;
    }
}

void dequantize_q3_k_block(const BlockQ3_K& block, float* y) {
    const float d = load_f16(block.d);
    for (int sub = 0; sub < 16; ++sub) {
        const float dl = d * float(unpack_scale_q3_k(block.scales, sub));
        for (int j = 16 * sub; j < 16 * sub + 16; ++j) {
            const bool high = (block.hmask[j % 32] >> (j / 32)) & 1;
            y[j] = dl * float(two_bit_level(block.qs, j) - (high ? 0 : 4));
        }
    }
}

// Q4_K (Bits 4) and Q5_K (Bits 5): eight sub-blocks of 32.
template <int Bits, typename Block>
void dequantize_q45_k_block(const Block& block, float* y) {
    const float d = load_f16(block.d), dmin = load_f16(block.dmin);
    for (int sub = 0; sub < 8; ++sub) {
        const ScaleMin sm = unpack_scale_min_k4(block.scales, sub);
        const float dl = d * float(sm.scale), ml = dmin * float(sm.min);
        const uint8_t* q = block.qs + 32 * (sub / 2);
        const int shift = 4 * (sub % 2);
        for (int l = 0; l < 32; ++l) {
            int level = (q[l] >> shift) & 15;
            if constexpr (Bits == 5) level += ((block.qh[l] >> sub) & 1) << 4;
            y[32 * sub + l] = dl * float(level) - ml;
        }
    }
}

void dequantize_q6_k_block(const BlockQ6_K& block, float* y) {
    const float d = load_f16(block.d);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = block.ql + 64 * half;
        const uint8_t* qh = block.qh + 32 * half;
        for (int group = 0; group < 4; ++group) {  // elements 128·half + 32·group + l
            const uint8_t* low = ql + 32 * (group % 2);
            const int low_shift = 4 * (group / 2);
            for (int l = 0; l < 32; ++l) {
                const int level = ((low[l] >> low_shift) & 15) | ((qh[l] >> (2 * group)) & 3) << 4;
                const int j = 128 * half + 32 * group + l;
                y[j] = d * float(block.scales[j / 16]) * float(level - 32);
            }
        }
    }
}

template <typename Block, void (*DecodeBlock)(const Block&, float*)>
void dequantize_blocks(const void* blocks, float* out, int64_t n) {
    const auto* block = static_cast<const Block*>(blocks);
    for (int64_t b = 0; b < n / kQK; ++b) DecodeBlock(block[b], out + b * kQK);
}

// ---- Encoding (ggml's quantize_row_*_ref).

// Packs 256 two-bit levels the way two_bit_level reads them.
void pack_two_bit_levels(const uint8_t* L, uint8_t* qs) {
    for (int half = 0; half < 2; ++half)
        for (int l = 0; l < 32; ++l) {
            const uint8_t* g = L + 128 * half + l;
            qs[32 * half + l] = uint8_t(g[0] | g[32] << 2 | g[64] << 4 | g[96] << 6);
        }
}

// ggml's importance weights for value x of a super-block: importance·sqrt(sigma2 + x²), sigma2 =
// sigma_factor·Σx²/256 (quantize_row_q*_K_impl).
float super_block_sigma2(const float* x, float sigma_factor) {
    float sumx2 = 0;
    for (int j = 0; j < kQK; ++j) sumx2 += x[j] * x[j];
    return sigma_factor * sumx2 / kQK;
}
// Fills n weights; returns their sum.
float importance_weights(const float* x, const float* importance, float sigma2, int n, float* weights) {
    for (int l = 0; l < n; ++l) weights[l] = importance[l] * std::sqrt(sigma2 + x[l] * x[l]);
    float sum = 0;
    for (int l = 0; l < n; ++l) sum += weights[l];
    return sum;
}

void quantize_q2_k_block(const float* x, BlockQ2_K& block, const float* importance) {
    constexpr float kScaleMax = 15.f;
    uint8_t L[kQK];
    float scales[16], mins[16], weights[16];
    if (importance) {
        // ggml's make_qkx3_quants (the asymmetric search, given weights) for each sub-block, then
        // make_qp_quants for the scales and mins, weighted by each sub-block's total weight.
        const float sigma2 = super_block_sigma2(x, 1.f);
        float sub_weights[16];
        for (int sub = 0; sub < 16; ++sub) {
            sub_weights[sub] = importance_weights(x + 16 * sub, importance + 16 * sub, sigma2, 16, weights);
            scales[sub] = search_asymmetric_scale(16, {3, -0.9f, 0.05f, 36, false}, x + 16 * sub, weights, L + 16 * sub, &mins[sub]);
        }
        uint8_t ls[16], lm[16];
        const float d = search_positive_scale(16, 15, scales, sub_weights, ls);
        const float dmin = search_positive_scale(16, 15, mins, sub_weights, lm);
        store_f16(block.d, d);
        store_f16(block.dmin, dmin);
        for (int sub = 0; sub < 16; ++sub) block.scales[sub] = uint8_t(ls[sub] | lm[sub] << 4);
    } else {
        float max_scale = 0, max_min = 0;
        for (int sub = 0; sub < 16; ++sub) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * sub + l]);
            scales[sub] = search_asymmetric_scale(16, {3, -0.5f, 0.1f, 15, true}, x + 16 * sub, weights,
                                                  L + 16 * sub, &mins[sub]);
            if (scales[sub] > max_scale) max_scale = scales[sub];
            if (mins[sub] > max_min) max_min = mins[sub];
        }
        // Sub-block scales and mins as 4-bit multiples of d = max_scale/15 and dmin = max_min/15.
        if (max_scale > 0) {
            const float iscale = kScaleMax / max_scale;
            for (int sub = 0; sub < 16; ++sub) block.scales[sub] = uint8_t(nearest_int(iscale * scales[sub]));
            store_f16(block.d, max_scale / kScaleMax);
        } else {
            std::memset(block.scales, 0, sizeof block.scales);
            store_f16(block.d, 0.f);
        }
        if (max_min > 0) {
            const float iscale = kScaleMax / max_min;
            for (int sub = 0; sub < 16; ++sub) block.scales[sub] |= uint8_t(nearest_int(iscale * mins[sub]) << 4);
            store_f16(block.dmin, max_min / kScaleMax);
        } else {
            store_f16(block.dmin, 0.f);
        }
    }
    // Requantize against the stored (f16) factors; a sub-block with factor 0 keeps its search levels.
    const float d = load_f16(block.d), dmin = load_f16(block.dmin);
    for (int sub = 0; sub < 16; ++sub) {
        const float dl = d * float(block.scales[sub] & 15);
        if (dl == 0) continue;
        const float ml = dmin * float(block.scales[sub] >> 4);
        for (int l = 0; l < 16; ++l)
            L[16 * sub + l] = uint8_t(std::clamp(nearest_int((x[16 * sub + l] + ml) / dl), 0, 3));
    }
    pack_two_bit_levels(L, block.qs);
}

// Packs 16 sub-block scales l + 32 (6 bits) the way unpack_scale_q3_k reads them.
void pack_scales_q3_k(const int* stored, uint8_t* scales) {
    std::memset(scales, 0, 12);
    for (int sub = 0; sub < 16; ++sub) {
        const int l = stored[sub];
        if (sub < 8)
            scales[sub] = uint8_t(l & 15);
        else
            scales[sub - 8] |= uint8_t((l & 15) << 4);
        scales[8 + sub % 4] |= uint8_t((l >> 4) << (2 * (sub / 4)));
    }
}

void quantize_q3_k_block(const float* x, BlockQ3_K& block, const float* importance) {
    int8_t L[kQK];
    float scales[16];
    int stored[16];
    if (importance) {
        // make_qx_quants for each sub-block with the importance weights, and again for the
        // sub-block scales weighted by each sub-block's total weight.
        const float sigma2 = super_block_sigma2(x, 2.f);
        float weights[16], sub_weights[16];
        for (int sub = 0; sub < 16; ++sub) {
            sub_weights[sub] = importance_weights(x + 16 * sub, importance + 16 * sub, sigma2, 16, weights);
            scales[sub] = search_symmetric_scale(16, 4, x + 16 * sub, L + 16 * sub, weights);
        }
        int8_t ls[16];
        const float d = search_symmetric_scale(16, 32, scales, ls, sub_weights);
        for (int sub = 0; sub < 16; ++sub) stored[sub] = ls[sub];
        pack_scales_q3_k(stored, block.scales);
        store_f16(block.d, d);
    } else {
        float max_scale = 0, amax = 0;
        for (int sub = 0; sub < 16; ++sub) {
            scales[sub] = search_symmetric_scale_refined(16, 4, x + 16 * sub, L + 16 * sub);
            if (std::fabs(scales[sub]) > amax) {
                amax = std::fabs(scales[sub]);
                max_scale = scales[sub];
            }
        }
        // Signed 6-bit sub-block scales l in [−32, 31] of d = max_scale / −32, stored as l + 32.
        if (max_scale != 0) {
            const float iscale = -32.f / max_scale;
            for (int sub = 0; sub < 16; ++sub) {
                const int8_t wrapped = int8_t(nearest_int(iscale * scales[sub]));  // ggml stores it in an int8_t
                stored[sub] = std::clamp(int(wrapped), -32, 31) + 32;
            }
            pack_scales_q3_k(stored, block.scales);
            store_f16(block.d, 1 / iscale);
        } else {
            std::memset(block.scales, 0, sizeof block.scales);
            store_f16(block.d, 0.f);
        }
    }
    const float d = load_f16(block.d);
    for (int sub = 0; sub < 16; ++sub) {
        const float dl = d * float(unpack_scale_q3_k(block.scales, sub));
        if (dl == 0) continue;
        for (int l = 0; l < 16; ++l)
            L[16 * sub + l] = int8_t(std::clamp(nearest_int(x[16 * sub + l] / dl), -4, 3) + 4);
    }
    // Levels 0..7: bit 2 goes to hmask (element j: bit j/32 of hmask[j%32]), bits 0..1 to qs.
    std::memset(block.hmask, 0, sizeof block.hmask);
    uint8_t low[kQK];
    for (int j = 0; j < kQK; ++j) {
        if (L[j] > 3) block.hmask[j % 32] |= uint8_t(1 << (j / 32));
        low[j] = uint8_t(L[j] & 3);
    }
    pack_two_bit_levels(low, block.qs);
}

// Packs eight 6-bit scales and mins the way unpack_scale_min_k4 reads them.
void pack_scale_min_k4(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
    for (int k = 0; k < 8; ++k) {
        if (k < 4) {
            scales[k] = ls[k];
            scales[k + 4] = lm[k];
        } else {
            scales[k + 4] = uint8_t((ls[k] & 15) | (lm[k] & 15) << 4);
            scales[k - 4] |= uint8_t((ls[k] >> 4) << 6);
            scales[k] |= uint8_t((lm[k] >> 4) << 6);
        }
    }
}

// Q4_K (Bits 4) and Q5_K (Bits 5).
template <int Bits, typename Block>
void quantize_q45_k_block(const float* x, Block& block, const float* importance) {
    constexpr int kMaxLevel = (1 << Bits) - 1;
    uint8_t L[kQK];
    float scales[8], mins[8], weights[32];
    uint8_t ls[8], lm[8];
    float d, dmin;
    if (importance) {
        const float sigma2 = super_block_sigma2(x, 2.f);
        float sub_weights[8];
        for (int sub = 0; sub < 8; ++sub) {
            sub_weights[sub] = importance_weights(x + 32 * sub, importance + 32 * sub, sigma2, 32, weights);
            scales[sub] = search_asymmetric_scale(32, {kMaxLevel, -0.9f, 0.05f, 36, false}, x + 32 * sub, weights,
                                                  L + 32 * sub, &mins[sub]);
        }
        d = search_positive_scale(8, 63, scales, sub_weights, ls);
        dmin = search_positive_scale(8, 63, mins, sub_weights, lm);
    } else {
        // ggml's search parameters: Q4_K tries 21 scales from nmax − 1, Q5_K 16 from nmax − 0.5.
        constexpr AsymmetricSearch kSearch = Bits == 4 ? AsymmetricSearch{15, -1.f, 0.1f, 20, false}
                                                       : AsymmetricSearch{31, -0.5f, 0.1f, 15, false};
        float max_scale = 0, max_min = 0;
        for (int sub = 0; sub < 8; ++sub) {
            const float* xs = x + 32 * sub;
            float sum_x2 = 0;
            for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
            const float av_x = std::sqrt(sum_x2 / 32);
            for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);  // w = rms + |x|
            scales[sub] = search_asymmetric_scale(32, kSearch, xs, weights, L + 32 * sub, &mins[sub]);
            if (scales[sub] > max_scale) max_scale = scales[sub];
            if (mins[sub] > max_min) max_min = mins[sub];
        }
        // 6-bit multiples of d = max_scale/63 and dmin = max_min/63.
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int sub = 0; sub < 8; ++sub) {
            ls[sub] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[sub])));
            lm[sub] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[sub])));
        }
        d = max_scale / 63.f;
        dmin = max_min / 63.f;
    }
    pack_scale_min_k4(ls, lm, block.scales);
    store_f16(block.d, d);
    store_f16(block.dmin, dmin);
    d = load_f16(block.d);
    dmin = load_f16(block.dmin);
    for (int sub = 0; sub < 8; ++sub) {
        const ScaleMin sm = unpack_scale_min_k4(block.scales, sub);
        const float dl = d * float(sm.scale);
        if (dl == 0) continue;
        const float ml = dmin * float(sm.min);
        for (int l = 0; l < 32; ++l)
            L[32 * sub + l] = uint8_t(std::clamp(nearest_int((x[32 * sub + l] + ml) / dl), 0, kMaxLevel));
    }
    if constexpr (Bits == 5) std::memset(block.qh, 0, sizeof block.qh);
    for (int sub = 0; sub < 8; ++sub) {
        uint8_t* q = block.qs + 32 * (sub / 2);
        const int shift = 4 * (sub % 2);
        for (int l = 0; l < 32; ++l) {
            const int level = L[32 * sub + l];
            if (shift == 0) q[l] = 0;
            q[l] |= uint8_t((level & 15) << shift);
            if constexpr (Bits == 5) block.qh[l] |= uint8_t((level >> 4) << sub);
        }
    }
}

void quantize_q6_k_block(const float* x, BlockQ6_K& block, const float* importance) {
    int8_t L[kQK];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int sub = 0; sub < 16; ++sub) {
        // ggml weighs Q6_K's search with the importance weights as they are (no sigma term).
        scales[sub] = search_symmetric_scale(16, 32, x + 16 * sub, L + 16 * sub, importance ? importance + 16 * sub : nullptr);
        if (std::fabs(scales[sub]) > max_abs_scale) {
            max_abs_scale = std::fabs(scales[sub]);
            max_scale = scales[sub];
        }
    }
    if (max_abs_scale < 1e-15f) {  // ggml's GROUP_MAX_EPS: an all-zero block
        std::memset(&block, 0, sizeof block);
        return;
    }
    // int8 sub-block scales of d = max_scale / −128.
    const float iscale = -128.f / max_scale;
    store_f16(block.d, 1 / iscale);
    for (int sub = 0; sub < 16; ++sub) block.scales[sub] = int8_t(std::min(127, nearest_int(iscale * scales[sub])));
    const float d = load_f16(block.d);
    for (int sub = 0; sub < 16; ++sub) {
        const float dl = d * float(block.scales[sub]);
        if (dl == 0) continue;
        for (int l = 0; l < 16; ++l)
            L[16 * sub + l] = int8_t(std::clamp(nearest_int(x[16 * sub + l] / dl), -32, 31) + 32);
    }
    // Inverse of dequantize_q6_k_block's layout.
    for (int half = 0; half < 2; ++half) {
        uint8_t* ql = block.ql + 64 * half;
        uint8_t* qh = block.qh + 32 * half;
        const int8_t* g = L + 128 * half;
        for (int l = 0; l < 32; ++l) {
            ql[l] = uint8_t((g[l] & 15) | (g[l + 64] & 15) << 4);
            ql[l + 32] = uint8_t((g[l + 32] & 15) | (g[l + 96] & 15) << 4);
            qh[l] = uint8_t((g[l] >> 4) | (g[l + 32] >> 4) << 2 | (g[l + 64] >> 4) << 4 | (g[l + 96] >> 4) << 6);
        }
    }
}

template <typename Block, void (*EncodeBlock)(const float*, Block&, const float*)>
void quantize_blocks(const float* in, void* blocks, int64_t n, const float* importance) {
    auto* block = static_cast<Block*>(blocks);
    for (int64_t b = 0; b < n / kQK; ++b) EncodeBlock(in + b * kQK, block[b], importance ? importance + b * kQK : nullptr);
}

}  // namespace

void dequantize_row_q2_k(const void* b, float* out, int64_t n) { dequantize_blocks<BlockQ2_K, dequantize_q2_k_block>(b, out, n); }
void dequantize_row_q3_k(const void* b, float* out, int64_t n) { dequantize_blocks<BlockQ3_K, dequantize_q3_k_block>(b, out, n); }
void dequantize_row_q4_k(const void* b, float* out, int64_t n) { dequantize_blocks<BlockQ4_K, dequantize_q45_k_block<4, BlockQ4_K>>(b, out, n); }
void dequantize_row_q5_k(const void* b, float* out, int64_t n) { dequantize_blocks<BlockQ5_K, dequantize_q45_k_block<5, BlockQ5_K>>(b, out, n); }
void dequantize_row_q6_k(const void* b, float* out, int64_t n) { dequantize_blocks<BlockQ6_K, dequantize_q6_k_block>(b, out, n); }
void quantize_row_q2_k(const float* in, void* b, int64_t n) { quantize_blocks<BlockQ2_K, quantize_q2_k_block>(in, b, n, nullptr); }
void quantize_row_q2_k_weighted(const float* in, void* b, int64_t n, const float* importance) {
    quantize_blocks<BlockQ2_K, quantize_q2_k_block>(in, b, n, importance);
}
void quantize_row_q3_k(const float* in, void* b, int64_t n) { quantize_blocks<BlockQ3_K, quantize_q3_k_block>(in, b, n, nullptr); }
void quantize_row_q3_k_weighted(const float* in, void* b, int64_t n, const float* importance) {
    quantize_blocks<BlockQ3_K, quantize_q3_k_block>(in, b, n, importance);
}
void quantize_row_q4_k(const float* in, void* b, int64_t n) { quantize_blocks<BlockQ4_K, quantize_q45_k_block<4, BlockQ4_K>>(in, b, n, nullptr); }
void quantize_row_q4_k_weighted(const float* in, void* b, int64_t n, const float* importance) {
    quantize_blocks<BlockQ4_K, quantize_q45_k_block<4, BlockQ4_K>>(in, b, n, importance);
}
void quantize_row_q5_k(const float* in, void* b, int64_t n) { quantize_blocks<BlockQ5_K, quantize_q45_k_block<5, BlockQ5_K>>(in, b, n, nullptr); }
void quantize_row_q5_k_weighted(const float* in, void* b, int64_t n, const float* importance) {
    quantize_blocks<BlockQ5_K, quantize_q45_k_block<5, BlockQ5_K>>(in, b, n, importance);
}
void quantize_row_q6_k(const float* in, void* b, int64_t n) { quantize_blocks<BlockQ6_K, quantize_q6_k_block>(in, b, n, nullptr); }
void quantize_row_q6_k_weighted(const float* in, void* b, int64_t n, const float* importance) {
    quantize_blocks<BlockQ6_K, quantize_q6_k_block>(in, b, n, importance);
}

}  // namespace k3::tensor
