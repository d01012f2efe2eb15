// Scalar reference of the × Q8_K integer kernels (int_dot.h), and their dispatch.
#include "kernels/int_dot_q8k.h"

#include <cmath>

#include "kernels/int_dot_q8k_formats.h"
#include "tensor/no_fp_contract.h"

namespace k3::kernels {
namespace {

// Per block one integer sum with the integer slot scales applied (and one of
// the slot mins times the activation's slot sums), then one f32 fma each.
template <typename Format>
float int_dot_scalar(const void* weight_row, const void* act_row, int64_t n) {
    const auto* w = static_cast<const typename Format::BlockType*>(weight_row);
    const auto* a = static_cast<const ActBlockQ8_K*>(act_row);
    float acc = 0.0f, off = 0.0f;
    int8_t q[256];
    int sc[kQ8KSlots], m[kQ8KSlots];
    for (int64_t b = 0; b < n / 256; ++b) {
        Format::levels(w[b], q);
        Format::slot_scales(w[b], sc);
        int32_t isum = 0;
        for (int j = 0; j < kQ8KSlots; ++j) {
            int32_t slot = 0;
            for (int i = 16 * j; i < 16 * j + 16; ++i) slot += int32_t(q[i]) * int32_t(a[b].qs[i]);
            isum += sc[j] * slot;
        }
        acc = std::fma(q8k_formats::weight_factor<Format>(Format::d_bits(w[b])) * a[b].d, float(isum), acc);
        if constexpr (Format::kOffset) {
            Format::slot_mins(w[b], m);
            int32_t msum = 0;
            for (int j = 0; j < kQ8KSlots; ++j) msum += m[j] * int32_t(a[b].bsums[j]);
            off = std::fma(q8k_formats::weight_factor<Format>(Format::dmin_bits(w[b])) * a[b].d, float(msum), off);
        }
    }
    return acc - off;
}

}  // namespace

IntDotFn scalar_q8k_int_dot(tensor::Type weight) {
    return q8k_formats::with_format<IntDotFn>(weight, nullptr, []<typename F>() -> IntDotFn { return &int_dot_scalar<F>; });
}

}  // namespace k3::kernels
