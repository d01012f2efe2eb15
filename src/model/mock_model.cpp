#include "model/mock_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "util/error.h"

namespace k3::model {
namespace {

using tensor::Type;

// splitmix64: a counter-based generator, so any row can be drawn independently of the others.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

class RowRandom {
public:
    RowRandom(uint64_t seed, size_t index, int64_t row) : state_(mix(mix(seed ^ mix(index)) + uint64_t(row))) {}
    double uniform() {  // in (0, 1)
        state_ = mix(state_);
        return (double(state_ >> 11) + 0.5) * 0x1p-53;
    }
    double normal() {  // Box-Muller, one of the pair
        const double u = uniform(), v = uniform();
        return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
    }

private:
    uint64_t state_;
};

std::string blk(int64_t il, const char* name) { return "blk." + std::to_string(il) + "." + name; }

void require(bool ok, const std::string& what) {
    if (!ok) throw Error("mock shape: " + what);
}

}  // namespace

void MockShape::validate() const {
    require(n_embd > 0 && n_layer > 0 && n_head > 0 && kda_head_dim > 0 && conv_kernel > 0, "sizes must be positive");
    require(mla_every > 0, "--mla-every must be positive");
    require(kv_lora_rank > 0 && qk_nope_dim > 0 && qk_rope_dim >= 0 && v_head_dim > 0 && q_lora_rank >= 0, "MLA sizes must be positive");
    require(n_dense_lead >= 0 && n_dense_lead <= n_layer, "--dense-layers must be in 0..layers");
    require(n_dense_lead == n_layer || (n_expert > 0 && n_expert_used > 0 && n_expert_used <= n_expert && expert_ff > 0),
            "MoE layers need experts > 0 and 0 < experts-used <= experts");
    require(n_ff > 0 || n_dense_lead == 0, "dense layers need --ff > 0");
    require(n_shared >= 0 && expert_latent >= 0 && attn_res_block_size >= 0, "counts must not be negative");
    require(n_vocab >= 512, "vocab must be at least 512 (256 byte tokens + 256 special slots)");
    require(routing_skew >= 0.0 && std::isfinite(routing_skew), "--routing-skew must be a finite number >= 0");
}

MockShape mock_preset(const std::string& name) {
    MockShape s;  // the defaults are the tiny preset
    if (name == "tiny") return s;
    if (name == "bench") {
        s.n_embd = 2048;
        s.n_layer = 16;
        s.mla_every = 4;
        s.n_head = 8;
        s.kda_head_dim = 128;
        s.q_lora_rank = 512;
        s.kv_lora_rank = 256;
        s.qk_nope_dim = 128;
        s.qk_rope_dim = 64;
        s.v_head_dim = 128;
        s.n_ff = 5632;
        s.n_expert = 128;
        s.n_expert_used = 8;
        s.expert_ff = 768;
        s.expert_latent = 1024;
        s.n_shared = 2;
        s.attn_res_block_size = 4;
        s.n_vocab = 32768;
        s.context_length = 65536;
        s.expert_weights_scale = 1.0f;
        return s;
    }
    throw Error("unknown mock preset '" + name + "' (expected tiny or bench)");
}

int64_t MockTensor::rows() const {
    int64_t n = 1;
    for (size_t d = 1; d < ne.size(); ++d) n *= ne[d];
    return n;
}

uint64_t MockTensor::bytes() const { return uint64_t(rows()) * tensor::row_bytes(tensor::traits(type), ne[0]); }

std::vector<MockTensor> mock_tensors(const MockShape& s, const MockTypes& types) {
    s.validate();
    std::vector<MockTensor> list;
    auto add = [&](std::string name, Type type, std::vector<int64_t> ne, MockInit init) {
        const tensor::TypeTraits& t = tensor::traits(type);
        const bool fits = ne[0] % t.block_size == 0;
        list.push_back({std::move(name), fits ? type : Type::F32, std::move(ne), init, !fits, s.routing_skew});
    };
    auto weight = [&](std::string name, std::vector<int64_t> ne) { add(std::move(name), types.weights, std::move(ne), MockInit::scaled_normal); };
    auto f32 = [&](std::string name, std::vector<int64_t> ne, MockInit init) { add(std::move(name), Type::F32, std::move(ne), init); };

    const int64_t E = s.n_embd, H = s.n_head, D = s.kda_head_dim, I = H * D, K = s.conv_kernel;
    const int64_t Dk = s.qk_nope_dim + s.qk_rope_dim, Lkv = s.kv_lora_rank, Lq = s.q_lora_rank;
    const int64_t Ls = s.expert_latent > 0 ? s.expert_latent : E, Fe = s.expert_ff, Fs = Fe * s.n_shared;

    add("token_embd.weight", types.embeddings, {E, s.n_vocab}, MockInit::normal);  // §2.1
    for (int64_t il = 0; il < s.n_layer; ++il) {
        f32(blk(il, "attn_norm.weight"), {E}, MockInit::norm_weight);  // §2.2
        f32(blk(il, "ffn_norm.weight"), {E}, MockInit::norm_weight);
        if (s.attn_res_block_size > 0) {
            f32(blk(il, "attn_res_score.weight"), {E}, MockInit::scaled_normal);
            f32(blk(il, "ffn_res_score.weight"), {E}, MockInit::scaled_normal);
        }
        if (!s.is_mla(il)) {  // §2.3 KDA
            for (const char* conv : {"ssm_conv1d_q.weight", "ssm_conv1d_k.weight", "ssm_conv1d_v.weight"})
                f32(blk(il, conv), {K, 1, I, 1}, MockInit::scaled_normal);
            weight(blk(il, "attn_q.weight"), {E, I});
            weight(blk(il, "attn_k.weight"), {E, I});
            weight(blk(il, "attn_v.weight"), {E, I});
            weight(blk(il, "ssm_f_a.weight"), {E, D});
            weight(blk(il, "ssm_f_b.weight"), {D, I});
            weight(blk(il, "ssm_beta.weight"), {E, H});
            f32(blk(il, "ssm_a"), {H}, MockInit::ssm_a);
            f32(blk(il, "ssm_dt.bias"), {I}, MockInit::dt_bias);
            weight(blk(il, "ssm_g.weight"), {E, I});
            f32(blk(il, "ssm_norm.weight"), {D}, MockInit::norm_weight);
            weight(blk(il, "attn_output.weight"), {I, E});
        } else {  // §2.4 MLA, absorbed form
            if (Lq > 0) {
                f32(blk(il, "attn_q_a_norm.weight"), {Lq}, MockInit::norm_weight);
                weight(blk(il, "attn_q_a.weight"), {E, Lq});
                weight(blk(il, "attn_q_b.weight"), {Lq, H * Dk});
            } else {
                weight(blk(il, "attn_q.weight"), {E, H * Dk});
            }
            f32(blk(il, "attn_kv_a_norm.weight"), {Lkv}, MockInit::norm_weight);
            weight(blk(il, "attn_kv_a_mqa.weight"), {E, Lkv + s.qk_rope_dim});
            weight(blk(il, "attn_k_b.weight"), {s.qk_nope_dim, Lkv, H});
            weight(blk(il, "attn_v_b.weight"), {Lkv, s.v_head_dim, H});
            weight(blk(il, "attn_gate.weight"), {E, H * s.v_head_dim});
            weight(blk(il, "attn_output.weight"), {H * s.v_head_dim, E});
        }
        if (s.is_dense(il)) {  // §2.5
            weight(blk(il, "ffn_gate.weight"), {E, s.n_ff});
            weight(blk(il, "ffn_up.weight"), {E, s.n_ff});
            weight(blk(il, "ffn_down.weight"), {s.n_ff, E});
        } else {  // §2.6 latent MoE
            f32(blk(il, "ffn_gate_inp.weight"), {E, s.n_expert}, MockInit::scaled_normal);
            f32(blk(il, "exp_probs_b.bias"), {s.n_expert}, MockInit::selection_bias);
            add(blk(il, "ffn_gate_exps.weight"), types.experts, {Ls, Fe, s.n_expert}, MockInit::scaled_normal);
            add(blk(il, "ffn_up_exps.weight"), types.experts, {Ls, Fe, s.n_expert}, MockInit::scaled_normal);
            add(blk(il, "ffn_down_exps.weight"), types.experts, {Fe, Ls, s.n_expert}, MockInit::scaled_normal);
            if (s.expert_latent > 0) {
                weight(blk(il, "ffn_routed_down.weight"), {E, Ls});
                weight(blk(il, "ffn_routed_up.weight"), {Ls, E});
                f32(blk(il, "ffn_routed_norm.weight"), {Ls}, MockInit::norm_weight);
            }
            if (s.n_shared > 0) {
                weight(blk(il, "ffn_gate_shexp.weight"), {E, Fs});
                weight(blk(il, "ffn_up_shexp.weight"), {E, Fs});
                weight(blk(il, "ffn_down_shexp.weight"), {Fs, E});
            }
        }
    }
    if (s.attn_res_block_size > 0) f32("output_res_score.weight", {E}, MockInit::scaled_normal);
    f32("output_norm.weight", {E}, MockInit::norm_weight);
    add("output.weight", types.output, {E, s.n_vocab}, MockInit::scaled_normal);
    return list;
}

void write_mock_hparams(gguf::GgufWriter& w, const MockShape& s, const std::string& name) {
    const std::string a = "kimi-k3.";
    w.set_string("general.architecture", "kimi-k3");
    w.set_string("general.name", name);
    w.set_u32("general.quantization_version", 2);
    w.set_u32(a + "block_count", uint32_t(s.n_layer));
    w.set_u32(a + "context_length", uint32_t(s.context_length));
    w.set_u32(a + "embedding_length", uint32_t(s.n_embd));
    w.set_u32(a + "feed_forward_length", uint32_t(s.n_ff));
    w.set_u32(a + "attention.head_count", uint32_t(s.n_head));
    std::vector<int32_t> head_count_kv;  // 1 on MLA layers, 0 on KDA layers (§1.1)
    for (int64_t il = 0; il < s.n_layer; ++il) head_count_kv.push_back(s.is_mla(il) ? 1 : 0);
    w.set_i32_array(a + "attention.head_count_kv", head_count_kv);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
    w.set_u32(a + "vocab_size", uint32_t(s.n_vocab));
    w.set_u32(a + "expert_count", uint32_t(s.n_expert));
    w.set_u32(a + "expert_used_count", uint32_t(s.n_expert_used));
    w.set_u32(a + "expert_gating_func", 2);  // sigmoid
    w.set_u32(a + "ssm.conv_kernel", uint32_t(s.conv_kernel));
    w.set_u32(a + "kda.head_dim", uint32_t(s.kda_head_dim));
    w.set_f32(a + "kda.gate_lower_bound", s.gate_lower_bound);
    if (s.q_lora_rank > 0) w.set_u32(a + "attention.q_lora_rank", uint32_t(s.q_lora_rank));
    w.set_u32(a + "attention.kv_lora_rank", uint32_t(s.kv_lora_rank));
    w.set_u32(a + "rope.dimension_count", uint32_t(s.qk_rope_dim));
    w.set_u32(a + "attention.key_length", uint32_t(s.kv_lora_rank + s.qk_rope_dim));  // MLA cache row
    w.set_u32(a + "attention.value_length", uint32_t(s.kv_lora_rank));
    w.set_u32(a + "attention.key_length_mla", uint32_t(s.qk_nope_dim + s.qk_rope_dim));
    w.set_u32(a + "attention.value_length_mla", uint32_t(s.v_head_dim));
    w.set_u32(a + "expert_feed_forward_length", uint32_t(s.expert_ff));
    w.set_u32(a + "expert_shared_count", uint32_t(s.n_shared));
    w.set_u32(a + "leading_dense_block_count", uint32_t(s.n_dense_lead));
    w.set_f32(a + "expert_weights_scale", s.expert_weights_scale);
    w.set_bool(a + "expert_weights_norm", s.expert_weights_norm);
    if (s.expert_latent > 0) w.set_u32(a + "expert_latent_length", uint32_t(s.expert_latent));
    w.set_f32(a + "activation.situ_beta", s.situ_beta);
    w.set_f32(a + "activation.situ_linear_beta", s.situ_linear_beta);
    w.set_u32(a + "attn_res.block_size", uint32_t(s.attn_res_block_size));
}

void mock_row(const MockTensor& t, uint64_t seed, size_t index, int64_t row, float* out) {
    RowRandom rng(seed, index, row);
    const int64_t n = t.ne[0];
    if (t.init == MockInit::selection_bias) {
        std::fill(out, out + n, 0.0f);
        if (t.routing_skew == 0.0) return;
        // A seeded shuffle assigns popularity ranks 1..n (Fisher-Yates), so each layer favours
        // different experts.
        std::vector<int64_t> expert_of_rank(static_cast<size_t>(n));
        std::iota(expert_of_rank.begin(), expert_of_rank.end(), 0);
        for (int64_t i = n - 1; i > 0; --i)
            std::swap(expert_of_rank[size_t(i)], expert_of_rank[size_t(int64_t(rng.uniform() * double(i + 1)))]);
        for (int64_t r = 0; r < n; ++r)
            out[expert_of_rank[size_t(r)]] = float(-0.08 * t.routing_skew * std::log(double(r + 1)));
        return;
    }
    const double fan_in_scale = 1.0 / std::sqrt(double(n));
    for (int64_t i = 0; i < n; ++i) {
        switch (t.init) {
            case MockInit::scaled_normal: out[i] = float(rng.normal() * fan_in_scale); break;
            case MockInit::normal: out[i] = float(rng.normal()); break;
            case MockInit::norm_weight: out[i] = float(1.0 + rng.normal() / 50.0); break;
            case MockInit::ssm_a: out[i] = float(-(1.0 + 15.0 * rng.uniform())); break;  // -exp(log A), A ~ U(1, 16)
            case MockInit::dt_bias: {
                const double dt = std::exp(std::log(1e-3) + rng.uniform() * (std::log(1e-1) - std::log(1e-3)));
                out[i] = float(std::log(std::expm1(dt)));  // softplus(bias) = dt
                break;
            }
            case MockInit::selection_bias: break;  // handled above
        }
    }
}

}  // namespace k3::model
