// K3 hyper-parameters read from a GGUF's `kimi-k3.*` keys (k3-architecture.md §1), with every
// variant a real file may carry: per-layer or scalar head counts and widths, optional MLA/MoE
// keys, the gate lower bound present or absent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace k3::gguf { class GgufFile; }

namespace k3::model {

enum class GatingFunction : uint32_t { softmax = 1, sigmoid = 2, sqrt_softplus = 4 };

struct HParams {
    int64_t n_layer = 0;
    int64_t n_embd = 0;
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;
    float rms_eps = 1e-5f;

    std::vector<int64_t> n_head;     // per layer; KDA and MLA heads alike
    std::vector<int64_t> n_head_kv;  // per layer; 0 marks a KDA layer
    std::vector<int64_t> n_ff;       // per layer dense FFN width (feed_forward_length)

    // KDA (§4)
    int64_t kda_head_dim = 0;
    int64_t conv_kernel = 0;
    std::optional<float> gate_lower_bound;  // absent: Kimi-Linear softplus gate

    // MLA (§5)
    int64_t q_lora_rank = 0;
    int64_t kv_lora_rank = 0;
    int64_t key_length_mla = 0;    // nope + rope per head
    int64_t value_length_mla = 0;  // v head dim
    int64_t rope_dim = 0;          // the head-shared, un-rotated "rope" key part
    int64_t nope_dim() const { return key_length_mla - rope_dim; }

    // FFN / MoE (§6)
    int64_t n_dense_lead = 0;
    int64_t n_expert = 0;
    int64_t n_expert_used = 0;
    int64_t expert_ff = 0;
    int64_t n_expert_shared = 0;
    int64_t expert_latent = 0;  // 0: experts run at n_embd
    float expert_weights_scale = 0.0f;
    bool expert_weights_norm = false;
    GatingFunction gating = GatingFunction::sigmoid;

    int64_t attn_res_block_size = 0;  // 0: plain residual stream
    float situ_beta = 4.0f;
    float situ_linear_beta = 0.0f;  // <= 0: no transform of the up branch

    bool is_mla(int64_t il) const { return n_head_kv[size_t(il)] > 0; }
    bool is_dense_ffn(int64_t il) const { return il < n_dense_lead; }
    bool has_mla_layers() const;
    bool has_moe_layers() const { return n_dense_lead < n_layer; }

    // Throws k3::Error naming the key for a missing required key or an impossible value.
    static HParams from_gguf(const gguf::GgufFile& file);
};

}  // namespace k3::model
