// Every tensor of a K3 GGUF bound to its layer (k3-architecture.md §2), with each shape checked.
// Matrices stay views into the mapped file; small vectors (norm weights, scores, biases, conv
// taps) are decoded to f32 once at load.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/matmul.h"
#include "model/hparams.h"

namespace k3::gguf { class GgufFile; }

namespace k3::model {

using kernels::MatrixView;

// SiTU-GLU FFN: down · situ(gate · y, up · y). Dense FFN and shared experts.
struct GluWeights {
    MatrixView gate;  // [n_in] -> [width]
    MatrixView up;    // [n_in] -> [width]
    MatrixView down;  // [width] -> [n_out]
};

struct KdaWeights {
    int64_t n_head = 0, head_dim = 0;   // I = n_head * head_dim
    MatrixView q, k, v;                 // E -> I
    std::vector<float> conv_q, conv_k, conv_v;  // [I][conv_kernel], tap 0 = oldest input
    MatrixView f_a;                     // E -> R (low-rank decay gate)
    MatrixView f_b;                     // R -> I
    std::vector<float> dt_bias;         // [I]
    std::vector<float> a;               // [n_head] = -exp(A_log)
    MatrixView beta;                    // E -> n_head
    MatrixView g;                       // E -> I (full-rank output gate)
    std::vector<float> norm;            // [head_dim], shared by the heads
    MatrixView out;                     // I -> E
    int64_t n_head_total = 0;           // a parallel rank's heads only, of these many (model/shard.h); 0: all
};

struct MlaWeights {
    int64_t n_head = 0;
    // q through LoRA (q_a, q_a_norm, q_b) when q_a_norm is present, else plain q.
    std::optional<MatrixView> q_a;      // E -> Lq
    std::vector<float> q_a_norm;        // [Lq]
    std::optional<MatrixView> q_b;      // Lq -> H*Dk
    std::optional<MatrixView> q;        // E -> H*Dk
    MatrixView kv_a;                    // E -> Lkv + Dr
    std::vector<float> kv_a_norm;       // [Lkv]
    MatrixView k_b;                     // per head h rows [h*Lkv, (h+1)*Lkv) of Dn: ggml [Dn, Lkv, H]
    MatrixView v_b;                     // per head h rows [h*Dv, (h+1)*Dv) of Lkv: ggml [Lkv, Dv, H]
    std::optional<MatrixView> gate;     // E -> H*Dv (sigmoid output gate)
    MatrixView out;                     // H*Dv -> E
    int64_t n_head_total = 0;           // a parallel rank's heads only, of these many (model/shard.h); 0: all
};

struct MoeWeights {
    MatrixView router;                  // E -> X (f32 logits)
    std::vector<float> selection_bias;  // [X], used only to choose experts
    int64_t expert_width = 0;           // Fe
    int64_t expert_io = 0;              // Ls (latent) or E
    // Expert e's matrices are rows [e*n_out, (e+1)*n_out) of these stacked views.
    MatrixView gate_exps, up_exps;      // Ls -> Fe, per expert
    MatrixView down_exps;               // Fe -> Ls, per expert
    std::optional<MatrixView> routed_down;  // E -> Ls (latent MoE)
    std::optional<MatrixView> routed_up;    // Ls -> E
    std::vector<float> routed_norm;     // [Ls]; empty if absent
    std::optional<GluWeights> shared;   // full width, reads y
    // In a parallel job, the rank that runs each routed expert ([X], model/shard.h); empty: this
    // process runs them all.
    std::vector<int32_t> expert_rank;
};

struct LayerWeights {
    std::vector<float> attn_norm, ffn_norm;            // [E]
    std::vector<float> attn_res_score, ffn_res_score;  // [E]; empty when attn_res.block_size = 0
    std::optional<KdaWeights> kda;
    std::optional<MlaWeights> mla;
    std::optional<GluWeights> dense;
    std::optional<MoeWeights> moe;
};

struct ModelWeights {
    MatrixView token_embd;                // [V rows][E]
    std::vector<float> output_norm;       // [E]
    std::vector<float> output_res_score;  // [E]; empty when attn_res.block_size = 0
    MatrixView output;                    // E -> V
    std::vector<LayerWeights> layers;

    // Binds every tensor; sets hp.n_vocab from token_embd when the key was absent.
    // Throws k3::Error naming a missing tensor, or one whose shape or type is wrong.
    static ModelWeights bind(const gguf::GgufFile& file, HParams& hp);
};

}  // namespace k3::model
