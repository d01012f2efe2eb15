// llama-quantize's named mixtures (Q2_K, Q3_K_M, Q4_K_M, Q5_K_M, Q6_K), no importance matrix:
// which type each tensor of a model gets, following llama.cpp's llama_tensor_get_type
// (src/llama-quant.cpp) so that `k3 quantize` writes the tensor types llama-quantize writes.
//
// The rules in brief (n_layer = block_count):
// * Not quantized (kept in the source type): tensors with fewer than 2 dimensions (trailing 1s
//   ignored), names not ending in "weight", "*_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d*".
// * output.weight: Q6_K (Q8_0 if its rows are not a multiple of 256). token_embd.weight gets the
//   output rule only when the model has no output.weight (tied embeddings).
// * attn_v.weight (also attn_qkv / attn_kv_b): Q2_K -> Q4_K if n_gqa >= 4 else Q3_K;
//   Q3_K_M -> Q5_K for the first two such tensors, else Q4_K; Q4_K_M / Q5_K_M -> Q6_K where
//   use_more_bits(i, n) over the n attn_v tensors in file order; 8-expert models: Q8_0.
// * ffn_down* (ffn_down, _exps, _shexp; i = the tensor's layer for MoE models): Q2_K -> Q3_K;
//   Q3_K_M -> Q5_K if i < n_layer/16 else Q4_K; Q4_K_M / Q5_K_M -> Q6_K where use_more_bits(i, n_layer).
// * attn_output.weight: Q2_K -> Q3_K, Q3_K_M -> Q4_K (8-expert models: Q5_K for Q2_K/Q3_K_M/Q4_K_M).
// * attn_k.weight of 8-expert models: Q8_0.
// * everything else: the mixture's base type (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
// * Then rows not a multiple of the type's block fall back: Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0,
//   Q5_K -> Q5_1, Q6_K -> Q8_0, and to F16 if even that block does not divide the row.
// use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i − n/8) % 3 == 2 (integer division).
// "File order" is llama.cpp's loader order: by layer number ("blk.N."; others first), then name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor_type.h"

namespace k3::convert {

enum class Mixture { Q2_K, Q3_K_M, Q4_K_M, Q5_K_M, Q6_K };

// "Q4_K_M", "q2_k", ... (case-insensitive); nullopt if not one of the five.
std::optional<Mixture> parse_mixture(std::string_view name);
std::string_view mixture_name(Mixture mixture);
// llama.cpp's general.file_type for the mixture (LLAMA_FTYPE_MOSTLY_*): Q2_K 10, Q3_K_M 12,
// Q4_K_M 15, Q5_K_M 17, Q6_K 18.
uint32_t mixture_file_type(Mixture mixture);

// The hyperparameters the rules look at.
struct MixtureModel {
    int n_layer = 0;   // block_count
    int n_expert = 0;  // expert_count (0 for a dense model)
    int n_gqa = 0;     // head_count / head_count_kv of layer 0; 0 if layer 0 has no KV heads (K3: KDA)
};

struct MixtureTensor {
    std::string name;
    std::vector<int64_t> ne;  // ggml order
    tensor::Type source_type;
};

struct TypeChoice {
    tensor::Type type;
    bool fell_back = false;  // the mixture's type did not divide the rows (llama.cpp prints a warning)
};

class QuantMixture {
public:
    // `tensors` is the whole model (the attn_v rule counts over all of them). Throws k3::Error for
    // an MoE ffn_down tensor whose name has no valid "blk.N." layer.
    QuantMixture(Mixture mixture, const MixtureModel& model, const std::vector<MixtureTensor>& tensors);

    // The type of tensors[index] as given to the constructor.
    TypeChoice choose_type(size_t index) const { return choices_.at(index); }
    const std::vector<TypeChoice>& choices() const { return choices_; }

private:
    std::vector<TypeChoice> choices_;
};

}  // namespace k3::convert
