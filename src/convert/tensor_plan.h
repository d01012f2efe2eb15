// The HF -> GGUF tensor map of a K3 checkpoint (k3-architecture.md §2, §9): which GGUF tensors
// to write, their types and shapes, and the checkpoint tensors and transform each is made from.
// Planning reads only headers; every missing, extra, misshapen or unpaired tensor is reported
// before any output is written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "tensor/tensor_type.h"

namespace k3::convert {

enum class Recipe {
    Copy,          // one source, same elements in the same order (the shape may change)
    NegExpHeads,   // ssm_a[h] = -exp(A_log[h]) for h < n_head (A_log is padded to head_dim)
    ResScore,      // score[i] = res_norm[i] * res_proj[0][i]
    KvbToKb,       // attn_k_b[h] = (kv_b_proj[h][0:Dn][:])^T     math [H, Lkv, Dn]
    KvbToVb,       // attn_v_b[h] = kv_b_proj[h][Dn:Dn+Dv][:]      math [H, Dv, Lkv]
    StackMxfp4,    // experts' (weight_packed, weight_scale) pairs repacked and stacked
    StackExperts,  // experts' float weights stacked
};

struct PlannedTensor {
    std::string name;             // GGUF name
    tensor::Type type;
    std::vector<int64_t> ne;      // ggml order
    Recipe recipe = Recipe::Copy;
    // Copy/NegExpHeads: {src}; ResScore: {norm, proj}; Kvb*: {kv_b_proj};
    // StackMxfp4: {packed_0, scale_0, packed_1, scale_1, ...}; StackExperts: {w_0, w_1, ...}.
    std::vector<const SafeTensor*> sources;

    int64_t n_elements() const;
    uint64_t n_bytes() const;
};

// The element type written for everything that is not kept in F32 or already quantized.
// Q8_0 (or any block type) falls back to F16 for rows its block size does not divide.
struct PlanOptions {
    tensor::Type outtype = tensor::Type::BF16;
};

struct ConversionPlan {
    std::vector<PlannedTensor> tensors;        // in write order (llama.cpp's: experts first)
    std::vector<std::string> skipped;          // vision tower / projector tensors
    int64_t n_source_tensors = 0;              // checkpoint tensors consumed
    int64_t n_mxfp4_pairs = 0;                 // (weight_packed, weight_scale) pairs consumed
    bool experts_mxfp4 = false;
};

// Throws k3::Error listing the problems (the first few, and how many) if the checkpoint does
// not hold exactly the tensors the config implies.
ConversionPlan plan_conversion(const K3Config& config, const SafetensorsCheckpoint& checkpoint, const PlanOptions& options);

// The ggml type a float tensor gets: F32 for 1-D tensors, norms, score vectors, biases, ssm_a,
// the router and the conv weights (as llama.cpp keeps them); `outtype` otherwise, or when
// outtype's blocks do not divide ne[0] llama-quantize's fallback (IQ types and IQ4_XS -> IQ4_NL,
// Q2_K/Q3_K/TQ -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0), and F16 where that does not
// fit either or none is defined. Shared with `k3 quantize` and its mixtures.
bool keeps_f32(const std::string& gguf_name, const std::vector<int64_t>& ne);
tensor::Type block_compatible_type(tensor::Type wanted, int64_t ne0);

}  // namespace k3::convert
