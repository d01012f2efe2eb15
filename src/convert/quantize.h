// `k3 quantize`: re-encodes a GGUF's tensors into another type (F32, F16, BF16, Q8_0, MXFP4 and
// whatever else the type table can encode). 1-D tensors, norms, score vectors, biases, ssm_a,
// the router and the conv weights keep their type unless a --tensor-type rule names them;
// already-quantized tensors are re-encoded through f32 only with `requantize`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor_type.h"

namespace k3::convert {

struct QuantizeOptions {
    std::string input_path, output_path;
    std::string type;                                              // e.g. "q8_0", "mxfp4", or a mixture "Q4_K_M"
    std::vector<std::pair<std::string, std::string>> tensor_types;  // REGEX -> TYPE, first match wins
    bool requantize = false;
    std::string imatrix_path;  // importance matrix (llama.cpp's formats, convert/imatrix_file.h); empty: none
    uint64_t split_max_bytes = 0;
    bool overwrite = true;  // false: an existing output is an error (before anything is written)
    int n_threads = 0;      // encoding threads; 0: one per hardware thread
};

// llama_ftype written as general.file_type for a file whose main type is `type`.
uint32_t file_type_for(tensor::Type type);

// Returns the files written. Throws k3::Error (before writing) for an unknown type or a rule
// that cannot apply, for an imatrix that does not fit the model (no entry for any of its
// tensors, or an entry whose size is not the tensor's ne0 × experts), and, as llama-quantize,
// for a tensor headed for IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S or IQ3_XXS without an imatrix. Each tensor's type change (with any fallback) and the sizes before and
// after go to `report`, progress to `progress` (either may be null).
std::vector<std::string> quantize_model(const QuantizeOptions& options, std::FILE* report, std::FILE* progress);

}  // namespace k3::convert
