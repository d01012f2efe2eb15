#include "tensor/quant_search.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "tensor/no_fp_contract.h"

namespace k3::tensor {
namespace {

// ggml's GROUP_MAX_EPS: a group whose largest |x| is below this quantizes to all zeros.
constexpr float kGroupMaxEps = 1e-15f;

// Largest |x| of a group, and the signed value that has it (the first one on ties).
struct SignedMax {
    float abs_max = 0, value = 0;
};
SignedMax signed_max(int n, const float* x) {
    SignedMax m;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > m.abs_max) {
            m.abs_max = ax;
            m.value = x[i];
        }
    }
    return m;
}

}  // namespace

int nearest_table_index(const int8_t* values, float x) {
    const float twice = x + x;
    int index = 0;
    for (int step = 8; step > 0; step >>= 1) {
        const int j = index + step;
        index = twice >= float(values[j - 1] + values[j]) ? j : index;
    }
    return index;
}

float search_symmetric_scale(int n, int nmax, const float* x, int8_t* L, const float* weights) {
    const SignedMax m = signed_max(n, x);
    if (m.abs_max < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    // Weighted least squares over levels l for scale s: s = Σw·x·l / Σw·l² (w = x² by default).
    auto fit = [&](float iscale, float& sumlx, float& suml2) {
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = weights ? weights[i] : x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
    };
    auto assign = [&](float iscale) {
        for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    };
    float iscale = -nmax / m.value;
    float sumlx, suml2;
    fit(iscale, sumlx, suml2);
    assign(iscale);
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / m.value;
        fit(iscale, sumlx, suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            assign(iscale);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float search_symmetric_scale_refined(int n, int nmax, const float* x, int8_t* L) {
    const SignedMax m = signed_max(n, x);
    if (m.abs_max < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    const float iscale = -nmax / m.value;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    // Move one level at a time to its best value given all the others, while that helps.
    for (int pass = 0; pass < 5; ++pass) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = int8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (n_changed == 0) break;
    }
    for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float search_asymmetric_scale(int n, const AsymmetricSearch& search, const float* x,
                              const float* weights, uint8_t* L, float* min_out) {
    assert(n <= kMaxGroup);
    const int nmax = search.nmax;
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        *min_out = -min;
        return 0.f;
    }
    auto error_of = [&](float diff) { return search.use_mad ? std::fabs(diff) : diff * diff; };
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
        best_error += weights[i] * error_of(scale * L[i] + min - x[i]);
    }
    uint8_t Laux[kMaxGroup];
    for (int is = 0; is <= search.nstep; ++is) {
        iscale = (search.rmin + search.rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = uint8_t(l);
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        // Weighted least squares for x ≈ scale·l + min over the fixed levels.
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float error = 0;
            for (int i = 0; i < n; ++i) error += weights[i] * error_of(this_scale * Laux[i] + this_min - x[i]);
            if (error < best_error) {
                std::copy(Laux, Laux + n, L);
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *min_out = -min;
    return scale;
}

float search_positive_scale(int n, int nmax, const float* x, const float* weights, uint8_t* L) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
    if (max < kGroupMaxEps) {
        std::fill(L, L + n, uint8_t(0));
        return 0.f;
    }
    // The levels are stored as uint8 as ggml stores them: x may hold one negative value (an IQ2
    // sign flip), whose level wraps there, and the wrapped value is what the errors below use.
    float iscale = nmax / max;
    for (int i = 0; i < n; ++i) L[i] = uint8_t(nearest_int(iscale * x[i]));
    float best_mse = 0;
    {
        const float scale = 1 / iscale;
        for (int i = 0; i < n; ++i) {
            const float diff = x[i] - scale * L[i];
            best_mse += weights[i] * diff * diff;
        }
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * is + nmax) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * l;
            mse += weights[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearest_int(iscale * x[i]));
        L[i] = uint8_t(l);
        sumlx += weights[i] * x[i] * l;
        suml2 += weights[i] * l * l;
    }
    for (int pass = 0; pass < 5; ++pass) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = weights[i];
            float slx = sumlx - w * x[i] * L[i];
            float sl2 = suml2 - w * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = uint8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (n_changed == 0) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace k3::tensor
