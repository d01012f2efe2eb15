// A Hugging Face K3 config.json read into the hyper-parameters the converter needs, and the
// GGUF metadata keys of k3-architecture.md §1 derived from them. llama.cpp reads the text fields
// after merging `text_config` over the top level; so do we.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_file.h"

namespace k3::convert {

struct K3Config {
    int64_t n_layer = 0;          // num_hidden_layers
    int64_t n_embd = 0;           // hidden_size (E)
    int64_t n_vocab = 0;          // vocab_size (V)
    int64_t n_ff = 0;             // intermediate_size: dense FFN width (F)
    int64_t n_head = 0;           // num_attention_heads == linear_attn_config.num_heads (H)
    int64_t kda_head_dim = 0;     // linear_attn_config.head_dim (D); KDA width I = H * D
    int64_t conv_kernel = 0;      // linear_attn_config.short_conv_kernel_size (K)
    std::optional<float> gate_lower_bound;  // linear_attn_config.gate_lower_bound
    std::optional<int64_t> q_lora_rank;     // null: plain q_proj
    int64_t kv_lora_rank = 0;     // Lkv
    int64_t qk_nope_dim = 0;      // Dn
    int64_t qk_rope_dim = 0;      // Dr
    int64_t v_head_dim = 0;       // Dv
    bool mla_output_gate = true;  // mla_use_output_gate: g_proj -> attn_gate on MLA layers
    int64_t n_expert = 0;         // X
    int64_t n_expert_used = 0;
    int64_t n_expert_shared = 0;
    int64_t expert_ff = 0;        // moe_intermediate_size (Fe)
    int64_t expert_latent = 0;    // routed_expert_hidden_size (Ls); 0: experts at n_embd
    bool latent_norm = false;     // latent_moe_use_norm: routed_expert_norm present
    int64_t n_dense_lead = 0;     // first_k_dense_replace
    std::optional<int64_t> topk_group;
    float routed_scale = 0;       // routed_scaling_factor
    bool renormalize = false;     // moe_renormalize
    uint32_t gating_func = 2;     // 1 softmax, 2 sigmoid
    int64_t attn_res_block = 0;   // attn_res_block_size; 0: plain residual stream
    float situ_beta = 0, situ_linear_beta = 0;
    float rms_eps = 0;
    int64_t context_length = 0;   // max_position_embeddings
    std::vector<bool> is_mla;     // per 0-based layer, from the 1-based full_attn_layers
    std::optional<int64_t> bos_id, eos_id, pad_id, unk_id;

    int64_t kda_width() const { return n_head * kda_head_dim; }                   // I
    int64_t expert_in() const { return expert_latent > 0 ? expert_latent : n_embd; }  // Ls or E
    bool is_moe_layer(int64_t il) const { return il >= n_dense_lead; }
};

// Reads and checks config.json; every missing or contradictory field is a k3::Error naming it.
K3Config read_k3_config(const std::string& config_path);

// The `kimi-k3.*` hyper-parameter keys in llama.cpp's order (general.* and tokenizer.* apart).
std::vector<std::pair<std::string, gguf::Value>> k3_hparam_metadata(const K3Config& config);

}  // namespace k3::convert
