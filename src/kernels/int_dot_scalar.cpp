// Scalar reference of the integer kernels: the arithmetic int_dot.h defines, in plain C++.
#include <cmath>

#include "kernels/int_dot.h"
#include "kernels/int_dot_formats.h"
#include "tensor/no_fp_contract.h"

namespace k3::kernels {
namespace {

float reduce8(const float* a) { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }

template <typename Format>
float int_dot(const void* weight_row, const void* act_row, int64_t n) {
    const auto* w = static_cast<const uint8_t*>(weight_row);
    const auto* a = static_cast<const int_formats::ActBlock<Format>*>(act_row);
    float acc[8] = {}, off[8] = {};
    int8_t q[32];
    for (int64_t b = 0; b < n / 32; ++b, w += Format::kBytes) {
        Format::levels(w, q);
        int32_t isum = 0;
        for (int j = 0; j < 32; ++j) isum += int32_t(q[j]) * int32_t(a[b].qs[j]);
        const float scale = int_formats::weight_scale<Format>(w) * tensor::f16_to_f32(a[b].d);
        acc[b % 8] = std::fma(scale, float(isum), acc[b % 8]);
        if constexpr (Format::kOffset)
            off[b % 8] = std::fma(tensor::f16_to_f32(int_formats::load_u16(w + 2)), tensor::f16_to_f32(a[b].s), off[b % 8]);
    }
    if constexpr (Format::kOffset) return reduce8(acc) + reduce8(off);
    return reduce8(acc);
}

}  // namespace

const IntDotKernels& scalar_int_dot_kernels() {
    using namespace int_formats;
    static const IntDotKernels k{int_dot<Q8_0>, int_dot<Mxfp4>, int_dot<Q4_0>, int_dot<Q5_0>,
                                 int_dot<Iq4Nl>, int_dot<Q4_1>, int_dot<Q5_1>};
    return k;
}

}  // namespace k3::kernels
