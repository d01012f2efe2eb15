// Synthetic Hugging Face K3 checkpoints for converter tests: config.json plus safetensors shards
// whose headers describe every tensor of the model and whose data is a sparse hole (no real
// weights are written, so even the full-size K3 layout costs no disk).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::testing {

struct K3Dims {
    int64_t n_layer, E, V, F, H, D, K, Lq, Lkv, Dn, Dr, Dv, X, X_used, Fe, Ls, n_shared, res_block, n_dense;
    std::vector<int64_t> mla_layers;  // 0-based
};

// The released model's hyper-parameters (k3-architecture.md §12).
K3Dims real_k3_dims();

struct HfTensor {
    std::string name;
    std::string dtype;           // safetensors dtype
    std::vector<int64_t> shape;  // PyTorch order
};

// Every tensor of a K3 checkpoint with these dimensions, named as the release names them
// (language_model.* plus two vision tensors), per k3-architecture.md §2 and fixtures/hf/README.md.
std::vector<HfTensor> k3_hf_tensors(const K3Dims& dims);

// Writes config.json and `n_shards` shards (+ index) into `dir`; tensor data is left sparse.
void write_synthetic_checkpoint(const std::string& dir, const K3Dims& dims, const std::vector<HfTensor>& tensors, int n_shards);

}  // namespace k3::testing
