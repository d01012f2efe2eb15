#include "kernels/dequant.h"

namespace k3::kernels {

tensor::DequantizeRow dequantize_row_kernel(tensor::Type type, Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    const tensor::TypeTraits* traits = tensor::find_type(uint32_t(type));
    if (!traits || !traits->dequantize_row) return nullptr;
    if (isa != Isa::scalar) {
        if (tensor::DequantizeRow simd = avx2_dequantize_row(type)) return simd;
        if (tensor::DequantizeRow simd = avx2_dequantize_simple_row(type)) return simd;
    }
    return traits->dequantize_row;
}

tensor::DequantizeRow dequantize_row_kernel(tensor::Type type) {
    static const Isa isa = best_isa();
    return dequantize_row_kernel(type, isa);
}

QuantDotFn quant_dot_kernel(tensor::Type type, Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    switch (isa) {
        case Isa::scalar: return nullptr;
        case Isa::avx2: return avx2_quant_dot(type);
        case Isa::avx512: return avx512_quant_dot(type);
    }
    return nullptr;
}

}  // namespace k3::kernels
