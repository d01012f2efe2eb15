// The scale searches of ggml's reference quantizers (no importance matrix), shared by the legacy,
// K and IQ4 block formats. Byte equality with llama-quantize depends on every rounding here:
// each expression is evaluated in f32 in the same order ggml writes it (no FMA contraction;
// the library is built without -ffp-contract=fast, and ggml-base is built the same way).
#pragma once

#include <cstdint>
#include <cstring>
#include <climits>

namespace k3::tensor {

// ggml's nearest_int: adding 1.5·2^23 leaves round-to-nearest-even(value) in the low mantissa
// bits. Only meaningful for |value| <= 2^22; outside that it wraps exactly as ggml's does.
inline int nearest_int(float value) {
    const float shifted = value + 12582912.f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

// C's float -> int conversion as ggml's x86 build performs it (cvttss2si): truncation toward
// zero, and INT32_MIN for NaN and out-of-range values, where C++ leaves the result undefined.
// ggml's (int8_t)/(uint8_t) casts keep the low byte of this.
inline int32_t truncate_like_x86(float value) {
    if (!(value >= -2147483648.f && value < 2147483648.f)) return INT32_MIN;
    return int32_t(value);
}

// Index of the entry of the sorted 16-entry table `values` nearest to x; exact midpoints go to
// the upper entry (2x is compared with the sum of neighbours, both exact in f32).
int nearest_table_index(const int8_t* values, float x);

// Symmetric levels l in [-nmax, nmax) for n values with weights x² (or `weights` if given),
// trying 19 scales around nmax/max|x| (ggml make_qx_quants, rmse_type 1). Writes L = l + nmax;
// returns the scale.
float search_symmetric_scale(int n, int nmax, const float* x, int8_t* L, const float* weights = nullptr);

// As above with iterative per-value refinement (ggml make_q3_quants with do_rmse). L = l + nmax.
float search_symmetric_scale_refined(int n, int nmax, const float* x, int8_t* L);

// Asymmetric levels l in [0, nmax]: x ≈ scale·l − min (ggml make_qkx2_quants). Tries nstep+1
// scales (rmin + rdelta·i + nmax)/(max − min) and keeps the lowest weighted error (absolute if
// use_mad, else squared). Writes L, stores min (>= 0) in *min_out and returns the scale.
constexpr int kMaxGroup = 32;  // largest n any caller passes
struct AsymmetricSearch {
    int nmax;
    float rmin, rdelta;
    int nstep;
    bool use_mad;
};
float search_asymmetric_scale(int n, const AsymmetricSearch& search, const float* x,
                              const float* weights, uint8_t* L, float* min_out);

// Levels l in [0, nmax] for non-negative x with importance weights: x ≈ scale·l (ggml
// make_qp_quants). Tries 9 scales around nmax/max, then moves one level at a time while the
// weighted fit improves. Writes L and returns the scale.
float search_positive_scale(int n, int nmax, const float* x, const float* weights, uint8_t* L);

}  // namespace k3::tensor
