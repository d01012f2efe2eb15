// ggml's quantisation search into the codebook formats (quantize_row_iq*_impl, the code
// llama-quantize runs), reproduced step for step so that the bytes are equal: every sum is
// accumulated in ggml's order, in f32, without FMA contraction.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "tensor/block_iq_grid.h"
#include "tensor/iq_grid_search.h"
#include "tensor/iq_grids.h"
#include "tensor/no_fp_contract.h"
#include "tensor/quant_bytes.h"
#include "tensor/quant_search.h"
#include "util/error.h"

namespace k3::tensor {
namespace {

constexpr int kQK = kIqGridBlockSize;

// The weight ggml gives value x of a super-block whose mean square is sigma2:
// importance·sqrt(sigma2 + x²), or, without importance weights, the type's own fallback.
enum class PlainWeight { kSquare, kQuarterSigmaPlusSquare, kNone };
struct WeightRule {
    float sigma_factor;  // sigma2 = sigma_factor·Σx²/256
    PlainWeight plain;   // kNone: the type cannot be quantised without importance weights
};

float super_block_sigma2(const float* x, float sigma_factor) {
    float sumx2 = 0;
    for (int i = 0; i < kQK; ++i) sumx2 += x[i] * x[i];
    return sigma_factor * sumx2 / kQK;
}

void weights_of(const WeightRule& rule, float sigma2, const float* x, const float* importance, int n, float* w) {
    if (importance) {
        for (int i = 0; i < n; ++i) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
    } else if (rule.plain == PlainWeight::kSquare) {
        for (int i = 0; i < n; ++i) w[i] = x[i] * x[i];
    } else {
        for (int i = 0; i < n; ++i) w[i] = 0.25f * sigma2 + x[i] * x[i];
    }
}

void require_importance(const WeightRule& rule, const float* importance, const char* type) {
    if (!importance && rule.plain == PlainWeight::kNone)
        throw Error(std::string(type) + " needs importance weights (an imatrix) to quantise");
}

// ---- IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: magnitudes on a grid of odd levels 2l + 1.

struct CodebookSearch {
    const GridSearchTable& table;
    int sub_block;            // values sharing one scale (32 or 16)
    int max_level;            // levels 0 .. max_level − 1
    int trials;               // scale trials is = −trials .. trials
    float trial_step;         // id = (2·max_level − 1 + is·step) / reference
    float group_max_eps;      // a sub-block whose largest magnitude is below this is all zeros
    bool even_signs;          // 7 stored sign bits per 8 values: flip the least important value
    bool start_from_qp;       // IQ2_XXS: the reference is the make_qp_quants scale × max_level
    bool refit_always;        // IQ2_XXS: the final re-rounding runs even when all groups were on the grid
    bool refit_every_group;   // IQ2_XXS, IQ3_S: it re-rounds every group, not only those off the grid
    bool initially_on_grid;   // what the search assumes before a trial wins (IQ3_S: off)
};

// The grid point among the neighbours of `code` nearest to xval at `scale` (weights w);
// writes its levels to L and returns its index (ggml iq2/iq3_find_best_neighbour).
int nearest_neighbour(const GridSearchTable& table, unsigned code, const float* xval, const float* w,
                      float scale, int8_t* L) {
    const std::span<const uint16_t> candidates = table.neighbours(code);
    float best_d2 = FLT_MAX;
    int best = candidates[0];  // ggml asserts one is found; with finite inputs one always is
    for (const uint16_t candidate : candidates) {
        const int8_t* levels = table.levels(candidate);
        float d2 = 0;
        for (int i = 0; i < table.group(); ++i) {
            const float q = float(2 * levels[i] + 1);
            const float diff = scale * q - xval[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = candidate;
        }
    }
    std::copy_n(table.levels(best), table.group(), L);
    return best;
}

// One sub-block's fit: its scale, the grid index of each group and the sign bits of each 8 values.
struct SubBlockFit {
    bool fitted = false;  // false: below the group epsilon, stored as zeros
    float scale = 0;
    uint16_t grid[8] = {};
    uint8_t signs[4] = {};
};

float weighted_fit(int n, const float* xval, const float* weight, const int8_t* L, float& sumq2) {
    float sumqx = 0;
    sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i];
        const float q = float(2 * L[i] + 1);
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    return sumqx;
}

SubBlockFit fit_sub_block(const CodebookSearch& s, const float* xb, const float* weight) {
    const GridSearchTable& table = s.table;
    const int n = s.sub_block, group = table.group(), n_groups = n / group;
    SubBlockFit fit;
    float xval[32] = {}, waux[32];
    for (int i = 0; i < n; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < n / 8; ++k) {
        unsigned signs = 0;
        int n_negative = 0;
        for (int i = 0; i < 8; ++i) {
            const float v = xb[8 * k + i];
            xval[8 * k + i] = v >= 0 ? v : -v;
            if (!(v >= 0)) {
                ++n_negative;
                signs |= 1u << i;
            }
        }
        if (s.even_signs && n_negative % 2) {
            int imin = 0;
            float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; ++i) {
                const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            signs ^= 1u << imin;
        }
        fit.signs[k] = uint8_t(s.even_signs ? signs & 127 : signs);
    }
    float max = xval[0];
    for (int i = 1; i < n; ++i) max = max > xval[i] ? max : xval[i];
    if (max < s.group_max_eps) return fit;

    int8_t L[32] = {}, Laux[32];
    float scale = max / float(2 * s.max_level - 1), reference = max;
    if (s.start_from_qp) {
        uint8_t Lqp[32];
        scale = search_positive_scale(n, s.max_level + 1, xval, weight, Lqp);
        reference = scale * float(s.max_level);
        if (reference <= 0) return fit;
    }
    bool on_grid[8], on_grid_aux[8];
    std::fill_n(on_grid, n_groups, s.initially_on_grid);
    float best = 0;
    for (int is = -s.trials; is <= s.trials; ++is) {
        const float id = (2 * s.max_level - 1 + float(is) * s.trial_step) / reference;
        const float this_scale = 1 / id;
        for (int k = 0; k < n_groups; ++k) {
            int8_t* Lg = Laux + group * k;
            for (int i = 0; i < group; ++i)
                Lg[i] = int8_t(std::clamp(nearest_int(0.5f * (id * xval[group * k + i] - 1)), 0, s.max_level - 1));
            const unsigned code = table.code_of(Lg);
            on_grid_aux[k] = table.index_of(code) >= 0;
            if (!on_grid_aux[k]) nearest_neighbour(table, code, xval + group * k, waux + group * k, this_scale, Lg);
        }
        float sumq2;
        const float sumqx = weighted_fit(n, xval, weight, Laux, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::copy_n(Laux, n, L);
            std::copy_n(on_grid_aux, n_groups, on_grid);
        }
    }
    const bool any_off_grid = std::find(on_grid, on_grid + n_groups, false) != on_grid + n_groups;
    if ((s.refit_always || any_off_grid) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < n_groups; ++k) {
            if (!s.refit_every_group && on_grid[k]) continue;
            int8_t* Lg = L + group * k;
            for (int i = 0; i < group; ++i)
                Lg[i] = int8_t(std::clamp(nearest_int(0.5f * (id * xval[group * k + i] - 1)), 0, s.max_level - 1));
            const unsigned code = table.code_of(Lg);
            if (table.index_of(code) < 0) nearest_neighbour(table, code, xval + group * k, waux + group * k, scale, Lg);
        }
        float sumq2;
        const float sumqx = weighted_fit(n, xval, weight, L, sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) {  // ggml: "should never happen"; the scale is stored unsigned
        scale = -scale;
        for (int k = 0; k < n / 8; ++k) fit.signs[k] = uint8_t(~fit.signs[k] & (s.even_signs ? 127 : 255));
    }
    for (int k = 0; k < n_groups; ++k) {
        const int index = table.index_of(table.code_of(L + group * k));
        if (index < 0) throw Error("IQ quantisation search left a group off the grid");
        fit.grid[k] = uint16_t(index);
    }
    fit.fitted = true;
    fit.scale = scale;
    return fit;
}

// One super-block's fits, and the 4-bit scale codes ggml derives from them: d = max/31,
// code = nearest_int((scale/d − 1)/2) in [0, 15]. d_fudge scales the d stored.
struct CodebookBlockFit {
    SubBlockFit sub[16];
    uint8_t scale_code[16] = {};
    float d = 0;  // 0: every scale was 0
};

CodebookBlockFit fit_block(const CodebookSearch& s, const WeightRule& rule, const float* x, const float* importance,
                           float d_fudge) {
    CodebookBlockFit block;
    const float sigma2 = super_block_sigma2(x, rule.sigma_factor);
    const int n_sub = kQK / s.sub_block;
    if (n_sub > int(std::size(block.sub))) throw Error("IQ search: sub-blocks of " + std::to_string(s.sub_block));
    float max_scale = 0;
    for (int ib = 0; ib < n_sub; ++ib) {
        float weight[32];
        weights_of(rule, sigma2, x + s.sub_block * ib, importance ? importance + s.sub_block * ib : nullptr,
                   s.sub_block, weight);
        block.sub[ib] = fit_sub_block(s, x + s.sub_block * ib, weight);
        max_scale = max_scale > block.sub[ib].scale ? max_scale : block.sub[ib].scale;
    }
    if (max_scale == 0) return block;
    const float d = max_scale / 31;
    block.d = d * d_fudge;
    const float id = 1 / d;
    for (int ib = 0; ib < n_sub; ++ib)
        block.scale_code[ib] = uint8_t(std::clamp(nearest_int(0.5f * (id * block.sub[ib].scale - 1)), 0, 15));
    return block;
}

template <typename Block, typename Pack>
void quantize_codebook_row(const CodebookSearch& s, const WeightRule& rule, float d_fudge, const char* type,
                           const float* in, void* blocks, int64_t n, const float* importance, Pack pack) {
    require_importance(rule, importance, type);
    auto* block = static_cast<Block*>(blocks);
    for (int64_t b = 0; b < n / kQK; ++b) {
        const CodebookBlockFit fit = fit_block(s, rule, in + b * kQK, importance ? importance + b * kQK : nullptr, d_fudge);
        std::memset(&block[b], 0, sizeof(Block));
        pack(fit, block[b]);
    }
}

const WeightRule kIq2WeightsNeedImportance{1.f, PlainWeight::kNone};

// ---- IQ1_S, IQ1_M: values −1, 0, 1 plus a shift ±δ, chosen by an exhaustive split of the
// sorted values into three runs.

constexpr float kIq1Plus[3] = {-1 + kIq1Delta, kIq1Delta, 1 + kIq1Delta};
constexpr float kIq1Minus[3] = {-1 - kIq1Delta, -kIq1Delta, 1 - kIq1Delta};

// Indices of the n values of xb in ascending order (stable, as glibc's qsort merge sort is).
void ascending_order(const float* xb, int n, int* order) {
    std::iota(order, order + n, 0);
    std::stable_sort(order, order + n, [xb](int a, int b) { return xb[a] < xb[b]; });
}

// Levels 0, 1, 2 by rank: the values before position i1 of the order, from i1 to i2, and after.
// A negative scale is made positive by mirroring the levels (−1 ↔ 1), which mirrors the shift
// too: returns whether it did, for the caller to flip its shift.
bool levels_by_rank(const int* order, int n, int i1, int i2, int8_t* L, float& scale) {
    for (int j = 0; j < n; ++j) L[order[j]] = int8_t(j < i1 ? 0 : j < i2 ? 1 : 2);
    if (scale >= 0) return false;
    for (int j = 0; j < n; ++j) L[j] = int8_t(2 - L[j]);
    scale = -scale;
    return true;
}

// The grid point among the neighbours of `code` nearest to xb at `scale` with shifted values xx
// (ggml iq1_find_best_neighbour2); writes its levels to L.
int iq1_nearest_neighbour(const GridSearchTable& table, unsigned code, const float* xb, const float* w, float scale,
                          const float* xx, int8_t* L) {
    const std::span<const uint16_t> candidates = table.neighbours(code);
    float best_d2 = FLT_MAX;
    int best = candidates[0];
    for (const uint16_t candidate : candidates) {
        const int8_t* levels = table.levels(candidate);
        float d2 = 0;
        for (int i = 0; i < 8; ++i) {
            const float diff = scale * xx[levels[i]] - xb[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = candidate;
        }
    }
    std::copy_n(table.levels(best), 8, L);
    return best;
}

// Grid indices for the groups of 8 of L (off-grid ones by their nearest neighbour, with shift
// tables shift_of(k)); if any was off the grid, refits the scale to the chosen points.
template <typename ShiftOf>
void iq1_grid_indices(const float* xb, const float* weight, int n, int8_t* L, ShiftOf shift_of, float& scale,
                      uint16_t* index) {
    const GridSearchTable& table = iq1s_search_table();
    bool all_on_grid = true;
    for (int k = 0; k < n / 8; ++k) {
        const unsigned code = table.code_of(L + 8 * k);
        int grid_index = table.index_of(code);
        if (grid_index < 0) {
            all_on_grid = false;
            grid_index = iq1_nearest_neighbour(table, code, xb + 8 * k, weight + 8 * k, scale, shift_of(k), L + 8 * k);
        }
        index[k] = uint16_t(grid_index);
    }
    if (all_on_grid) return;
    float sumqx = 0, sumq2 = 0;
    for (int k = 0; k < n / 8; ++k) {
        const int8_t* levels = table.levels(index[k]);
        const float* xx = shift_of(k);
        for (int j = 0; j < 8; ++j) {
            const float w = weight[8 * k + j];
            const float q = xx[levels[j]];
            sumqx += w * q * xb[8 * k + j];
            sumq2 += w * q * q;
        }
    }
    if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
}

const WeightRule kIq1sWeights{2.f, PlainWeight::kNone};
const WeightRule kIq1mWeights{2.f, PlainWeight::kSquare};

float max_magnitude(const float* xb, int n) {
    float max = std::fabs(xb[0]);
    for (int i = 1; i < n; ++i) max = max > std::fabs(xb[i]) ? max : std::fabs(xb[i]);
    return max;
}

}  // namespace

void quantize_row_iq2_xxs(const float* in, void* blocks, int64_t n, const float* importance) {
    const CodebookSearch search{iq2xxs_search_table(), 32, 3, 6, 0.1f, 1e-15f, true, true, true, true, true};
    quantize_codebook_row<BlockIq2xxs>(search, kIq2WeightsNeedImportance, 1.f, "IQ2_XXS", in, blocks, n, importance,
                                       [](const CodebookBlockFit& fit, BlockIq2xxs& y) {
        if (fit.d == 0) return;  // ggml clears the whole block
        store_f16(y.d, fit.d);
        for (int ib = 0; ib < 8; ++ib) {
            const SubBlockFit& sub = fit.sub[ib];
            uint32_t signs_scale = uint32_t(fit.scale_code[ib]) << 28;
            for (int k = 0; k < 4; ++k) {
                y.qs[8 * ib + k] = uint8_t(sub.grid[k]);
                if (sub.fitted) signs_scale |= uint32_t(sub.signs[k]) << (7 * k);
            }
            store_u32(y.qs + 8 * ib + 4, signs_scale);
        }
    });
}

void quantize_row_iq2_xs(const float* in, void* blocks, int64_t n, const float* importance) {
    const CodebookSearch search{iq2xs_search_table(), 16, 3, 9, 0.1f, 1e-15f, true, false, false, false, true};
    quantize_codebook_row<BlockIq2xs>(search, kIq2WeightsNeedImportance, 1.f, "IQ2_XS", in, blocks, n, importance,
                                      [](const CodebookBlockFit& fit, BlockIq2xs& y) {
        if (fit.d == 0) return;
        store_f16(y.d, fit.d);
        for (int ib = 0; ib < 16; ++ib) {
            if (fit.sub[ib].fitted)
                for (int k = 0; k < 2; ++k)
                    store_u16(y.qs + 2 * (2 * ib + k), uint16_t(fit.sub[ib].grid[k] | fit.sub[ib].signs[k] << 9));
            y.scales[ib / 2] |= uint8_t(fit.scale_code[ib] << (4 * (ib % 2)));
        }
    });
}

void quantize_row_iq2_s(const float* in, void* blocks, int64_t n, const float* importance) {
    const CodebookSearch search{iq2s_search_table(), 16, 3, 9, 0.1f, 1e-8f, false, false, false, false, true};
    quantize_codebook_row<BlockIq2s>(search, {2.f, PlainWeight::kQuarterSigmaPlusSquare}, 0.9875f, "IQ2_S", in, blocks,
                                     n, importance, [](const CodebookBlockFit& fit, BlockIq2s& y) {
        for (int ib = 0; ib < 16; ++ib) {
            if (!fit.sub[ib].fitted) continue;
            for (int k = 0; k < 2; ++k) {
                const int g = 2 * ib + k;
                y.grid_low[g] = uint8_t(fit.sub[ib].grid[k]);
                y.qh[g / 4] |= uint8_t((fit.sub[ib].grid[k] >> 8) << (2 * (g % 4)));
                y.signs[g] = fit.sub[ib].signs[k];
            }
        }
        if (fit.d == 0) return;  // ggml keeps the grid points and signs, with scale 0
        store_f16(y.d, fit.d);
        for (int ib = 0; ib < 16; ++ib) y.scales[ib / 2] |= uint8_t(fit.scale_code[ib] << (4 * (ib % 2)));
    });
}

void quantize_row_iq3_xxs(const float* in, void* blocks, int64_t n, const float* importance) {
    const CodebookSearch search{iq3xxs_search_table(), 32, 8, 15, 0.2f, 1e-8f, true, false, false, false, true};
    quantize_codebook_row<BlockIq3xxs>(search, {2.f, PlainWeight::kSquare}, 1.0125f, "IQ3_XXS", in, blocks, n,
                                       importance, [](const CodebookBlockFit& fit, BlockIq3xxs& y) {
        if (fit.d == 0) return;
        store_f16(y.d, fit.d);
        for (int ib = 0; ib < 8; ++ib) {
            const SubBlockFit& sub = fit.sub[ib];
            uint32_t signs_scale = uint32_t(fit.scale_code[ib]) << 28;
            for (int k = 0; k < 8; ++k) y.qs[8 * ib + k] = uint8_t(sub.grid[k]);
            if (sub.fitted)
                for (int k = 0; k < 4; ++k) signs_scale |= uint32_t(sub.signs[k]) << (7 * k);
            store_u32(y.scales_signs + 4 * ib, signs_scale);
        }
    });
}

void quantize_row_iq3_s(const float* in, void* blocks, int64_t n, const float* importance) {
    // ggml tests !max (any positive magnitude is fitted): the smallest positive float is the epsilon.
    const CodebookSearch search{iq3s_search_table(), 32, 8, 9, 0.2f, std::numeric_limits<float>::denorm_min(),
                                false, false, false, true, false};
    quantize_codebook_row<BlockIq3s>(search, {2.f, PlainWeight::kSquare}, 1.033f, "IQ3_S", in, blocks, n, importance,
                                     [](const CodebookBlockFit& fit, BlockIq3s& y) {
        for (int ib = 0; ib < 8; ++ib) {
            if (!fit.sub[ib].fitted) continue;
            for (int k = 0; k < 8; ++k) {
                const int g = 8 * ib + k;
                y.qs[g] = uint8_t(fit.sub[ib].grid[k]);
                y.qh[g / 8] |= uint8_t((fit.sub[ib].grid[k] >> 8) << (g % 8));
            }
            for (int k = 0; k < 4; ++k) y.signs[4 * ib + k] = fit.sub[ib].signs[k];
        }
        if (fit.d == 0) return;
        store_f16(y.d, fit.d);
        for (int ib = 0; ib < 8; ib += 2)
            y.scales[ib / 2] = uint8_t(fit.scale_code[ib] | fit.scale_code[ib + 1] << 4);
    });
}

void quantize_row_iq1_s(const float* in, void* blocks, int64_t n, const float* importance) {
    require_importance(kIq1sWeights, importance, "IQ1_S");
    constexpr int kSub = 32;
    auto* block = static_cast<BlockIq1s*>(blocks);
    for (int64_t b = 0; b < n / kQK; ++b) {
        const float* xbl = in + b * kQK;
        BlockIq1s& y = block[b];
        std::memset(&y, 0, sizeof y);
        const float sigma2 = super_block_sigma2(xbl, kIq1sWeights.sigma_factor);
        float scales[kQK / kSub] = {}, max_scale = 0;
        int shifts[kQK / kSub];
        uint16_t qh[kQK / kSub] = {};
        for (int ib = 0; ib < kQK / kSub; ++ib) {
            const float* xb = xbl + kSub * ib;
            float weight[kSub];
            weights_of(kIq1sWeights, sigma2, xb, importance + b * kQK + kSub * ib, kSub, weight);
            shifts[ib] = 1;
            if (max_magnitude(xb, kSub) < 1e-12f) continue;
            int order[kSub];
            ascending_order(xb, kSub, order);
            float sumx[kSub + 1], sumw[kSub + 1];
            sumx[0] = sumw[0] = 0;
            for (int j = 0; j < kSub; ++j) {
                sumx[j + 1] = sumx[j] + weight[order[j]] * xb[order[j]];
                sumw[j + 1] = sumw[j] + weight[order[j]];
            }
            float best_score = -FLT_MAX, scale = 0;
            int best_i1 = -1, best_i2 = -1, best_shift = 0;
            for (int i1 = 0; i1 <= kSub; ++i1) {
                for (int i2 = i1; i2 <= kSub; ++i2) {
                    for (const int shift : {1, -1}) {
                        const float* xx = shift == 1 ? kIq1Plus : kIq1Minus;
                        const float sumqx = (sumx[i1] - sumx[0]) * xx[0] + (sumx[i2] - sumx[i1]) * xx[1] +
                                            (sumx[kSub] - sumx[i2]) * xx[2];
                        const float sumq2 = (sumw[i1] - sumw[0]) * xx[0] * xx[0] + (sumw[i2] - sumw[i1]) * xx[1] * xx[1] +
                                            (sumw[kSub] - sumw[i2]) * xx[2] * xx[2];
                        if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                            scale = sumqx / sumq2;
                            best_score = scale * sumqx;
                            best_i1 = i1;
                            best_i2 = i2;
                            best_shift = shift;
                        }
                    }
                }
            }
            if (best_i1 < 0) continue;
            int8_t L[kSub];
            if (levels_by_rank(order, kSub, best_i1, best_i2, L, scale)) best_shift = -best_shift;
            const float* xx = best_shift == 1 ? kIq1Plus : kIq1Minus;
            uint16_t index[kSub / 8];
            iq1_grid_indices(xb, weight, kSub, L, [xx](int) { return xx; }, scale, index);
            for (int k = 0; k < kSub / 8; ++k) {
                y.qs[(kSub / 8) * ib + k] = uint8_t(index[k]);
                qh[ib] |= uint16_t((index[k] >> 8) << (3 * k));
            }
            scales[ib] = scale;
            shifts[ib] = best_shift;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (max_scale != 0) {
            const float d = max_scale / 15;
            store_f16(y.d, d * 1.125f);
            const float id = 1 / d;
            for (int ib = 0; ib < kQK / kSub; ++ib) {
                int l = std::clamp(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
                if (shifts[ib] == -1) l |= 8;
                qh[ib] |= uint16_t(l << 12);
            }
        }
        for (int ib = 0; ib < kQK / kSub; ++ib) store_u16(y.qh + 2 * ib, qh[ib]);
    }
}

void quantize_row_iq1_m(const float* in, void* blocks, int64_t n, const float* importance) {
    constexpr int kSub = 16;
    // Shift combination c: bit 1 set = the first 8 values take −δ, bit 0 set = the last 8 do.
    auto shift_of = [](int combination, int k) {
        return (k == 0 ? combination < 2 : combination % 2 == 0) ? kIq1Plus : kIq1Minus;
    };
    auto* block = static_cast<BlockIq1m*>(blocks);
    const GridSearchTable& table = iq1s_search_table();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const float* xbl = in + b * kQK;
        const float* qw = importance ? importance + b * kQK : nullptr;
        BlockIq1m& y = block[b];
        std::memset(&y, 0, sizeof y);
        const float sigma2 = super_block_sigma2(xbl, kIq1mWeights.sigma_factor);
        float scales[kQK / kSub] = {}, max_scale = 0;
        int shifts[kQK / kSub] = {};
        for (int ib = 0; ib < kQK / kSub; ++ib) {
            const float* xb = xbl + kSub * ib;
            float weight[kSub];
            weights_of(kIq1mWeights, sigma2, xb, qw ? qw + kSub * ib : nullptr, kSub, weight);
            if (max_magnitude(xb, kSub) < 1e-7f) continue;
            int order[kSub];
            ascending_order(xb, kSub, order);
            float best_score = -FLT_MAX, scale = 0;
            int best_i1 = -1, best_i2 = -1, best_c = -1;
            for (int i1 = 0; i1 <= kSub; ++i1) {
                for (int i2 = i1; i2 <= kSub; ++i2) {
                    float sumqx[4] = {}, sumq2[4] = {};
                    for (int j = 0; j < kSub; ++j) {
                        const int i = order[j];
                        const int level = j < i1 ? 0 : j < i2 ? 1 : 2;
                        for (int c = 0; c < 4; ++c) {
                            const float q = shift_of(c, i / 8)[level];
                            sumqx[c] += weight[i] * q * xb[i];
                            sumq2[c] += weight[i] * q * q;
                        }
                    }
                    for (int c = 0; c < 4; ++c) {
                        if (sumq2[c] > 0 && sumqx[c] * sumqx[c] > best_score * sumq2[c]) {
                            scale = sumqx[c] / sumq2[c];
                            best_score = scale * sumqx[c];
                            best_i1 = i1;
                            best_i2 = i2;
                            best_c = c;
                        }
                    }
                }
            }
            if (best_c < 0) continue;
            int8_t L[kSub];
            if (levels_by_rank(order, kSub, best_i1, best_i2, L, scale)) best_c = 3 - best_c;  // both shifts flip
            uint16_t index[2];
            iq1_grid_indices(xb, weight, kSub, L, [&](int k) { return shift_of(best_c, k); }, scale, index);
            y.qs[2 * ib] = uint8_t(index[0]);
            y.qs[2 * ib + 1] = uint8_t(index[1]);
            y.qh[ib] = uint8_t((index[0] >> 8) | (index[1] >> 8) << 4);
            scales[ib] = scale;
            shifts[ib] = best_c;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (max_scale == 0) continue;

        // The sub-block codes, then d refitted to the chosen points and codes.
        uint16_t sc[4] = {};
        float d = max_scale / 15;
        const float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int ib = 0; ib < kQK / kSub; ++ib) {
            const int l = std::clamp(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
            sc[ib / 4] |= uint16_t(l << (3 * (ib % 4)));
            constexpr uint8_t kShiftBits[4] = {0x00, 0x80, 0x08, 0x88};
            y.qh[ib] |= kShiftBits[shifts[ib]];
            const float* xb = xbl + kSub * ib;
            float weight[kSub];
            weights_of(kIq1mWeights, sigma2, xb, qw ? qw + kSub * ib : nullptr, kSub, weight);
            for (int k = 0; k < 2; ++k) {
                const float* xx = shift_of(shifts[ib], k);
                const int8_t* levels = table.levels(y.qs[2 * ib + k] | ((y.qh[ib] >> (4 * k)) & 7) << 8);
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[levels[j]] * float(2 * l + 1);
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
        }
        if (sumq2 > 0) d = sumqx / sumq2;
        const uint16_t d_bits = f32_to_f16(d * 1.1125f);
        for (int i = 0; i < 4; ++i) store_u16(y.scales + 2 * i, uint16_t(sc[i] | ((d_bits >> (4 * i)) & 15) << 12));
    }
}

}  // namespace k3::tensor
