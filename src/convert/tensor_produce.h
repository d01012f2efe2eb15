// Producing one planned GGUF tensor's bytes from its checkpoint sources (the transforms of
// k3-architecture.md §2 and §9). Only that tensor and one row of f32 scratch are in memory.
#pragma once

#include <cstdint>

#include "convert/tensor_plan.h"

namespace k3::convert {

// The source bytes themselves when the tensor is a plain copy already in its GGUF encoding
// (then nothing needs producing); null otherwise.
const uint8_t* passthrough_bytes(const PlannedTensor& tensor);

// Writes tensor.n_bytes() bytes to `out`. Throws k3::Error naming the tensor on bad data
// (a 0xFF MXFP4 scale).
void produce_tensor(const PlannedTensor& tensor, uint8_t* out);

// Encodes rows of ne0 f32 values into `type` (row by row, so block types never straddle rows).
void encode_rows(const float* values, int64_t n_elements, int64_t ne0, tensor::Type type, uint8_t* out);

// Importance weights for a re-encoding: ne0 per matrix, matrix m for rows
// [m·rows_per_matrix, (m + 1)·rows_per_matrix) (an expert of a 3-D tensor).
struct RowImportance {
    const float* weights = nullptr;  // null: none
    int64_t rows_per_matrix = 1;
};

// Re-encodes n_rows rows of ne0 elements from one type to another through f32 (a plain copy
// when the types agree), spread over up to n_threads threads (0: one per hardware thread) for
// large tensors. Throws k3::Error if `from` cannot be decoded or `to` cannot be encoded by k3.
void transcode_rows(const uint8_t* src, tensor::Type from, uint8_t* dst, tensor::Type to, int64_t ne0, int64_t n_rows,
                    RowImportance importance = {}, int n_threads = 0);

}  // namespace k3::convert
