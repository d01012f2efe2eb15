// The traits table: one row per ggml type id k3 knows. To add a format, implement its row
// functions in its own block_<name>.cpp (with a header) and fill its row's pointers here.
#include "tensor/tensor_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "tensor/block_iq4.h"
#include "tensor/block_iq_grid.h"
#include "tensor/block_kquants.h"
#include "tensor/block_legacy.h"
#include "tensor/block_mxfp4.h"
#include "tensor/block_q8_0.h"
#include "tensor/block_ternary.h"
#include "tensor/float_formats.h"
#include "util/error.h"

namespace k3::tensor {
namespace {

// A weighted quantiser run without weights, for the types ggml can quantise either way.
template <QuantizeRowWeighted Weighted>
void without_importance(const float* in, void* blocks, int64_t n) {
    Weighted(in, blocks, n, nullptr);
}

// Block geometry from ggml (ggml-common.h); k3-architecture.md §9.
constexpr TypeTraits kTypes[] = {
    {Type::F32, "f32", 1, 4, dequantize_row_f32, quantize_row_f32},
    {Type::F16, "f16", 1, 2, dequantize_row_f16, quantize_row_f16},
    {Type::Q4_0, "q4_0", 32, 18, dequantize_row_q4_0, quantize_row_q4_0},
    {Type::Q4_1, "q4_1", 32, 20, dequantize_row_q4_1, quantize_row_q4_1},
    {Type::Q5_0, "q5_0", 32, 22, dequantize_row_q5_0, quantize_row_q5_0},
    {Type::Q5_1, "q5_1", 32, 24, dequantize_row_q5_1, quantize_row_q5_1},
    {Type::Q8_0, "q8_0", kQ8_0BlockSize, kQ8_0BlockBytes, dequantize_row_q8_0, quantize_row_q8_0},
    {Type::Q8_1, "q8_1", 32, 36, nullptr, nullptr},
    {Type::Q2_K, "q2_K", 256, 84, dequantize_row_q2_k, quantize_row_q2_k, quantize_row_q2_k_weighted},
    {Type::Q3_K, "q3_K", 256, 110, dequantize_row_q3_k, quantize_row_q3_k, quantize_row_q3_k_weighted},
    {Type::Q4_K, "q4_K", 256, 144, dequantize_row_q4_k, quantize_row_q4_k, quantize_row_q4_k_weighted},
    {Type::Q5_K, "q5_K", 256, 176, dequantize_row_q5_k, quantize_row_q5_k, quantize_row_q5_k_weighted},
    {Type::Q6_K, "q6_K", 256, 210, dequantize_row_q6_k, quantize_row_q6_k, quantize_row_q6_k_weighted},
    {Type::Q8_K, "q8_K", 256, 292, nullptr, nullptr},
    {Type::IQ2_XXS, "iq2_xxs", 256, 66, dequantize_row_iq2_xxs, nullptr, quantize_row_iq2_xxs},
    {Type::IQ2_XS, "iq2_xs", 256, 74, dequantize_row_iq2_xs, nullptr, quantize_row_iq2_xs},
    {Type::IQ3_XXS, "iq3_xxs", 256, 98, dequantize_row_iq3_xxs, without_importance<quantize_row_iq3_xxs>,
     quantize_row_iq3_xxs},
    {Type::IQ1_S, "iq1_s", 256, 50, dequantize_row_iq1_s, nullptr, quantize_row_iq1_s},
    {Type::IQ4_NL, "iq4_nl", 32, 18, dequantize_row_iq4_nl, quantize_row_iq4_nl, quantize_row_iq4_nl_weighted},
    {Type::IQ3_S, "iq3_s", 256, 110, dequantize_row_iq3_s, without_importance<quantize_row_iq3_s>, quantize_row_iq3_s},
    {Type::IQ2_S, "iq2_s", 256, 82, dequantize_row_iq2_s, without_importance<quantize_row_iq2_s>, quantize_row_iq2_s},
    {Type::IQ4_XS, "iq4_xs", 256, 136, dequantize_row_iq4_xs, quantize_row_iq4_xs, quantize_row_iq4_xs_weighted},
    {Type::I8, "i8", 1, 1, dequantize_row_i8, nullptr},
    {Type::I16, "i16", 1, 2, dequantize_row_i16, nullptr},
    {Type::I32, "i32", 1, 4, dequantize_row_i32, nullptr},
    {Type::I64, "i64", 1, 8, dequantize_row_i64, nullptr},
    {Type::F64, "f64", 1, 8, dequantize_row_f64, nullptr},
    {Type::IQ1_M, "iq1_m", 256, 56, dequantize_row_iq1_m, without_importance<quantize_row_iq1_m>, quantize_row_iq1_m},
    {Type::BF16, "bf16", 1, 2, dequantize_row_bf16, quantize_row_bf16},
    {Type::TQ1_0, "tq1_0", 256, 54, dequantize_row_tq1_0, quantize_row_tq1_0},
    {Type::TQ2_0, "tq2_0", 256, 66, dequantize_row_tq2_0, quantize_row_tq2_0},
    {Type::MXFP4, "mxfp4", kMxfp4BlockSize, kMxfp4BlockBytes, dequantize_row_mxfp4, quantize_row_mxfp4},
};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace

const TypeTraits* find_type(uint32_t id) {
    for (const TypeTraits& t : kTypes)
        if (uint32_t(t.type) == id) return &t;
    return nullptr;
}

const TypeTraits* find_type(std::string_view name) {
    for (const TypeTraits& t : kTypes)
        if (equal_ignoring_case(t.name, name)) return &t;
    return nullptr;
}

void quantize_row(const TypeTraits& t, const float* in, void* blocks, int64_t n, const float* importance) {
    if (importance && t.quantize_row_weighted) return t.quantize_row_weighted(in, blocks, n, importance);
    if (t.quantize_row) return t.quantize_row(in, blocks, n);
    if (t.quantize_row_weighted)
        throw Error(std::string(t.name) + " can only be quantised with importance weights (an imatrix)");
    throw Error("k3 cannot encode tensors as " + std::string(t.name));
}

const TypeTraits& traits(Type type) {
    const TypeTraits* t = find_type(uint32_t(type));
    if (!t) throw Error("unknown tensor type id " + std::to_string(uint32_t(type)));
    return *t;
}

}  // namespace k3::tensor
