#include "kernels/dot.h"

#include <algorithm>
#include <string>

#include "kernels/dequant.h"
#include "util/error.h"

namespace k3::kernels {

const int8_t kMxfp4DoubledValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

namespace {

const IsaDotKernels* kernels_for(Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    switch (isa) {
        case Isa::scalar: return &scalar_dot_kernels();
        case Isa::avx2: return &avx2_dot_kernels();
        case Isa::avx512: return &avx512_dot_kernels();
    }
    return nullptr;
}

// The scalar reference for a generic type decodes and sums in plain order.
template <tensor::Type kType>
float dot_row_dequantized_scalar(const void* row, const float* x, int64_t n) {
    static const tensor::TypeTraits& traits = tensor::traits(kType);
    const int64_t run = traits.block_size;
    float buffer[1024];
    const auto* bytes = static_cast<const uint8_t*>(row);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i += run) {
        traits.dequantize_row(bytes + tensor::row_bytes(traits, i), buffer, run);
        for (int64_t j = 0; j < run; ++j) sum += buffer[j] * x[i + j];
    }
    return sum;
}

// SIMD levels use the fused kernels of dequant.h (unpack levels, FMA, scale per sub-block).
template <tensor::Type kType>
DotRowFn generic_kernel(Isa isa) {
    return isa == Isa::scalar ? &dot_row_dequantized_scalar<kType> : quant_dot_kernel(kType, isa);
}

// Types decoded through their traits (k-quants, legacy quants, IQ, ternary).
DotRowFn generic_dot_kernel(tensor::Type type, Isa isa) {
    using T = tensor::Type;
    switch (type) {
        case T::Q4_0: return generic_kernel<T::Q4_0>(isa);
        case T::Q4_1: return generic_kernel<T::Q4_1>(isa);
        case T::Q5_0: return generic_kernel<T::Q5_0>(isa);
        case T::Q5_1: return generic_kernel<T::Q5_1>(isa);
        case T::Q2_K: return generic_kernel<T::Q2_K>(isa);
        case T::Q3_K: return generic_kernel<T::Q3_K>(isa);
        case T::Q4_K: return generic_kernel<T::Q4_K>(isa);
        case T::Q5_K: return generic_kernel<T::Q5_K>(isa);
        case T::Q6_K: return generic_kernel<T::Q6_K>(isa);
        case T::IQ4_NL: return generic_kernel<T::IQ4_NL>(isa);
        case T::IQ4_XS: return generic_kernel<T::IQ4_XS>(isa);
        case T::IQ2_XXS: return generic_kernel<T::IQ2_XXS>(isa);
        case T::IQ2_XS: return generic_kernel<T::IQ2_XS>(isa);
        case T::IQ2_S: return generic_kernel<T::IQ2_S>(isa);
        case T::IQ3_XXS: return generic_kernel<T::IQ3_XXS>(isa);
        case T::IQ3_S: return generic_kernel<T::IQ3_S>(isa);
        case T::IQ1_S: return generic_kernel<T::IQ1_S>(isa);
        case T::IQ1_M: return generic_kernel<T::IQ1_M>(isa);
        case T::TQ1_0: return generic_kernel<T::TQ1_0>(isa);
        case T::TQ2_0: return generic_kernel<T::TQ2_0>(isa);
        default: return nullptr;
    }
}

}  // namespace

DotRowFn dot_row_kernel(tensor::Type type, Isa isa) {
    const IsaDotKernels* k = kernels_for(isa);
    if (!k) return nullptr;
    switch (type) {
        case tensor::Type::F32: return k->f32;
        case tensor::Type::F16: return k->f16;
        case tensor::Type::BF16: return k->bf16;
        case tensor::Type::Q8_0: return k->q8_0;
        case tensor::Type::MXFP4: return k->mxfp4;
        default: break;
    }
    const tensor::TypeTraits* traits = tensor::find_type(uint32_t(type));
    if (!traits || !traits->dequantize_row || traits->block_size > 1024) return nullptr;
    return generic_dot_kernel(type, isa);
}

DotRowFn dot_row_kernel(tensor::Type type) {
    if (DotRowFn fn = dot_row_kernel(type, best_isa())) return fn;
    const tensor::TypeTraits* traits = tensor::find_type(uint32_t(type));
    throw Error("no dot kernel for weight type " +
                (traits ? std::string(traits->name) : std::to_string(uint32_t(type))) +
                " (k3 cannot decode it)");
}

float dot_f32(const float* a, const float* b, int64_t n) {
    static const auto fn = kernels_for(best_isa())->dot_f32;
    return fn(a, b, n);
}

void axpy_f32(float alpha, const float* x, float* y, int64_t n) {
    static const auto fn = kernels_for(best_isa())->axpy_f32;
    fn(alpha, x, y, n);
}

}  // namespace k3::kernels
