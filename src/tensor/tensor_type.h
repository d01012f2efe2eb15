// Element types and block formats, bit-compatible with GGUF (ggml type ids).
// Every weight type plugs in here once: its block geometry, row dequantization and, where
// k3 can produce it, row quantization. Kernels and the model never switch on raw ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace k3::tensor {

// ggml type ids (k3-architecture.md §9). Ids not listed here are "unknown" to k3.
enum class Type : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

using DequantizeRow = void (*)(const void* blocks, float* out, int64_t n);
using QuantizeRow = void (*)(const float* in, void* blocks, int64_t n);
// importance: one weight per element of the row (an imatrix column), as llama-quantize passes it.
using QuantizeRowWeighted = void (*)(const float* in, void* blocks, int64_t n, const float* importance);

struct TypeTraits {
    Type type;
    std::string_view name;           // as ggml names it: "f32", "q8_0", "mxfp4", "q4_K", ...
    uint32_t block_size;             // elements per block (1 for plain scalars)
    uint32_t block_bytes;            // bytes per block
    DequantizeRow dequantize_row;    // null: k3 cannot decode this type (yet)
    QuantizeRow quantize_row;        // null: k3 cannot produce this type without importance weights
    QuantizeRowWeighted quantize_row_weighted = nullptr;  // null: importance weights change nothing
};

// Whether the type can be produced with importance weights only (ggml's
// ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS, IQ1_S).
inline bool requires_importance(const TypeTraits& t) { return !t.quantize_row && t.quantize_row_weighted; }
// Whether k3 can produce the type at all (given importance weights where it needs them).
inline bool can_quantize(const TypeTraits& t) { return t.quantize_row || t.quantize_row_weighted; }
// Quantises one row with importance weights where the type uses them (importance may be null
// for a type that does not require them).
void quantize_row(const TypeTraits& t, const float* in, void* blocks, int64_t n, const float* importance);

// Traits of a ggml type id read from a file; null if k3 does not know the id at all.
const TypeTraits* find_type(uint32_t id);
// Traits by ggml name, case-insensitive ("Q4_K", "mxfp4"); null if unknown.
const TypeTraits* find_type(std::string_view name);
const TypeTraits& traits(Type type);

// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(const TypeTraits& t, int64_t n) { return size_t(n / t.block_size) * t.block_bytes; }

}  // namespace k3::tensor
