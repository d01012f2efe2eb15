// A random-initialised model of K3's shape (`k3 mock`): hyper-parameters -> the GGUF metadata
// and the tensor list of k3-architecture.md §1-2, in the fixtures' layout, with a
// deterministic per-row generator so tensors can be produced one at a time, in parallel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "tensor/tensor_type.h"

namespace k3::model {

struct MockShape {
    int64_t n_embd = 64;
    int64_t n_layer = 9;
    int64_t mla_every = 4;        // layer il is MLA when (il + 1) % mla_every == 0 or it is the last
    int64_t n_head = 4;           // KDA and MLA heads
    int64_t kda_head_dim = 16;
    int64_t conv_kernel = 4;
    int64_t q_lora_rank = 32;     // 0: plain attn_q on MLA layers
    int64_t kv_lora_rank = 32;
    int64_t qk_nope_dim = 16;
    int64_t qk_rope_dim = 16;
    int64_t v_head_dim = 16;
    int64_t n_ff = 128;           // dense FFN width (leading dense layers)
    int64_t n_dense_lead = 1;
    int64_t n_expert = 16;
    int64_t n_expert_used = 4;
    int64_t expert_ff = 32;
    int64_t expert_latent = 32;   // 0: experts run at n_embd, no routed_* tensors
    int64_t n_shared = 1;
    int64_t attn_res_block_size = 3;
    int64_t n_vocab = 1024;       // 256 byte tokens, fillers, then 256 K3 special slots
    int64_t context_length = 4096;
    float rms_eps = 1e-5f;
    float gate_lower_bound = -5.0f;
    float situ_beta = 4.0f;
    float situ_linear_beta = 25.0f;
    float expert_weights_scale = 2.5f;
    bool expert_weights_norm = true;
    // Expert popularity: 0 draws exp_probs_b as zeros (uniform routing); S > 0 gives expert of
    // popularity rank r (a seeded per-layer order) the selection bias -0.08 * S * ln(r). With the
    // mock's router logits ~ N(0, 1) that makes selection frequencies fall roughly as r^-S for
    // S <= 1 (simulated, 128 experts choose 8: S = 1 puts 65% of selections on the top quarter).
    double routing_skew = 0.0;

    bool is_mla(int64_t il) const { return (il + 1) % mla_every == 0 || il == n_layer - 1; }
    bool is_dense(int64_t il) const { return il < n_dense_lead; }

    // Throws k3::Error naming the first impossible value (e.g. vocab below 512).
    void validate() const;
};

// "tiny" (the fixtures' tiny-k3 structure) or "bench" (~2.9 GB: n_embd 2048, 16 layers, 128
// experts). Throws k3::Error for another name.
MockShape mock_preset(const std::string& name);

// Storage types per tensor group. Tensors the converter always keeps in F32 (1-D, norms,
// ssm_a, biases, router, conv) ignore these.
struct MockTypes {
    tensor::Type weights = tensor::Type::F32;     // every other 2-D/3-D weight
    tensor::Type experts = tensor::Type::F32;     // ffn_{gate,up,down}_exps
    tensor::Type embeddings = tensor::Type::F32;  // token_embd
    tensor::Type output = tensor::Type::F32;      // output (lm head)
};

// How a tensor's values are drawn (spec names in the comments).
enum class MockInit {
    scaled_normal,  // N(0, 1) / sqrt(ne[0]): weights, by fan-in
    normal,         // N(0, 1): token embeddings
    norm_weight,    // 1 + N(0, 1) / 50: RMSNorm weights ~ 1
    ssm_a,          // -exp(A_log) with A = U(1, 16) (Kimi-Linear's init)
    dt_bias,        // softplus^-1(dt), dt log-uniform in [1e-3, 1e-1]
    selection_bias, // exp_probs_b: zeros, or Zipf-like with MockTensor::routing_skew
};

struct MockTensor {
    std::string name;
    tensor::Type type;
    std::vector<int64_t> ne;
    MockInit init;
    bool fell_back_to_f32 = false;  // the requested type's block does not divide ne[0]
    double routing_skew = 0.0;      // selection_bias only: MockShape::routing_skew

    int64_t rows() const;
    uint64_t bytes() const;
};

std::vector<MockTensor> mock_tensors(const MockShape& shape, const MockTypes& types);

// kimi-k3.* and general.* keys (not the tokenizer's).
void write_mock_hparams(gguf::GgufWriter& writer, const MockShape& shape, const std::string& name);

// Row `row` of tensor number `index`, as f32, determined by (seed, index, row) alone.
void mock_row(const MockTensor& tensor, uint64_t seed, size_t index, int64_t row, float* out);

}  // namespace k3::model
