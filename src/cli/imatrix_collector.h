// `k3 imatrix`'s accumulator: for every weight matrix of the model's layers ("blk.*"), the sums of
// the squared activations each of its input columns saw, and how many tokens they came from, as
// llama-imatrix collects them: one row of sums per expert of a 3-D expert tensor with a count per
// expert (the tokens routed to it); one row per matrix of another 3-D tensor (the heads of
// attn_k_b) with one count for all. Products are recognised by the address of their weights in
// the model's mapped file.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <mutex>
#include <string>
#include <vector>

#include "convert/imatrix_file.h"
#include "gguf/gguf_file.h"
#include "kernels/matmul.h"

namespace k3::cli {

class ImatrixCollector {
public:
    explicit ImatrixCollector(std::span<const gguf::TensorInfo> tensors);

    // One product's input: n rows of w.cols values, x_stride apart. Thread-safe.
    void observe(const kernels::MatrixView& w, const float* x, int64_t x_stride, int64_t n);

    // What was collected, in llama.cpp's terms (entries that saw no product are left out).
    convert::ImportanceMatrix result(std::vector<std::string> datasets, uint32_t chunk_count, uint32_t chunk_size) const;

private:
    struct Matrix {
        const gguf::TensorInfo* tensor;
        uint64_t matrix_bytes;  // bytes of one 2-D slice (one expert, one head)
        bool per_matrix_counts;  // a routed-expert tensor
    };
    std::vector<Matrix> matrices_;  // by address of the tensor's data
    std::map<std::string, convert::ImatrixEntry> entries_;
    std::mutex mutex_;
};

}  // namespace k3::cli
