// llama-quantize's named mixtures (Q2_K, Q3_K_M, Q4_K_M, Q5_K_M, Q6_K, and the IQ/TQ ones below):
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
// The IQ mixtures (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS, IQ3_S, IQ3_M,
// TQ1_0, TQ2_0) follow the rest of llama_tensor_get_type_impl: base types IQ2_S -> IQ2_XS,
// IQ2_M -> IQ2_S, IQ3_XS/IQ3_M -> IQ3_S; output Q5_K for the IQ1/IQ2/IQ3_XXS ones; token_embd
// Q2_K (IQ1, IQ2_XXS/XS), IQ3_S (IQ2_S/M, IQ3_XXS), Q4_K (TQ); for IQ1/IQ2 attn_v Q4_K (n_gqa or
// n_expert >= 4), the first n_layer/8 ffn_down tensors Q2_K (IQ3_S for IQ2_S/M), attn_output
// IQ2_XXS (IQ1) / IQ3_S (IQ2_S/M); IQ3_XXS: attn_k/attn_q IQ2_S, attn_output IQ3_S, and without an
// imatrix attn_v IQ3_S and ffn_down Q4_K/Q3_K; IQ3_XS: attn_k/attn_q and the middle layers'
// ffn_gate/ffn_up IQ3_XXS; IQ3_M: attn_v and attn_output Q4_K, the first n_layer/8 ffn_down Q4_K.
// Row widths the type cannot hold fall back as block_compatible_type says (IQ -> IQ4_NL, ...).
// "File order" is llama.cpp's loader order: by layer number ("blk.N."; others first), then name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor_type.h"

namespace k3::convert {

enum class Mixture {
    Q2_K, Q3_K_M, Q4_K_M, Q5_K_M, Q6_K,
    IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS, IQ3_S, IQ3_M, TQ1_0, TQ2_0,
};

// "Q4_K_M", "q2_k", "IQ2_M", ... (case-insensitive); nullopt if not one of the mixtures.
std::optional<Mixture> parse_mixture(std::string_view name);
std::string_view mixture_name(Mixture mixture);
// llama.cpp's general.file_type for the mixture (LLAMA_FTYPE_MOSTLY_*): Q2_K 10, Q3_K_M 12,
// Q4_K_M 15, Q5_K_M 17, Q6_K 18, IQ2_XXS 19, ... TQ2_0 37.
uint32_t mixture_file_type(Mixture mixture);

// The hyperparameters the rules look at.
struct MixtureModel {
    int n_layer = 0;   // block_count
    int n_expert = 0;  // expert_count (0 for a dense model)
    int n_gqa = 0;     // head_count / head_count_kv of layer 0; 0 if layer 0 has no KV heads (K3: KDA)
    bool has_imatrix = false;  // IQ3_XXS picks other types without one
};

struct MixtureTensor {
    std::string name;
    std::vector<int64_t> ne;  // ggml order
    tensor::Type source_type;
};

struct TypeChoice {
    tensor::Type type;
    tensor::Type wanted = type;  // the mixture's type, before a fallback for rows it does not divide
    bool fell_back() const { return type != wanted; }  // llama.cpp prints a warning
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
