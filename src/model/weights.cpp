#include "model/weights.h"

#include <string>

#include "gguf/gguf_file.h"
#include "util/error.h"

namespace k3::model {

namespace {

std::string shape_string(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

// Drops dimensions of 1 (they do not change the layout), so that the conv taps' [4, 1, 64, 1],
// [4, 1, 64] and [4, 64] compare equal.
std::vector<int64_t> squeezed(const std::vector<int64_t>& ne) {
    std::vector<int64_t> out;
    for (int64_t n : ne)
        if (n != 1) out.push_back(n);
    return out;
}

class Binder {
public:
    explicit Binder(const gguf::GgufFile& file) : file_(file) {}

    const gguf::TensorInfo* find(const std::string& name) const { return file_.find_tensor(name); }

    // The tensor with exactly this shape (dimensions of 1 ignored); throws if missing or mis-shaped.
    const gguf::TensorInfo& tensor(const std::string& name, const std::vector<int64_t>& expected) const {
        const gguf::TensorInfo* t = find(name);
        if (!t) throw Error(file_.path() + ": missing tensor " + name + " (expected shape " + shape_string(expected) + ")");
        if (squeezed(t->ne) != squeezed(expected))
            throw Error(file_.path() + ": tensor " + name + " has shape " + shape_string(t->ne) + ", expected " +
                        shape_string(expected));
        const tensor::TypeTraits& traits = tensor::traits(t->type);
        if (!traits.dequantize_row)
            throw Error(file_.path() + ": tensor " + name + " has type " + std::string(traits.name) +
                        ", which k3 cannot decode");
        return *t;
    }

    // A matrix [cols] -> [rows]; a 3-D tensor [cols, rows_per, n] is n stacked matrices.
    MatrixView matrix(const std::string& name, const std::vector<int64_t>& expected) const {
        const gguf::TensorInfo& t = tensor(name, expected);
        const tensor::TypeTraits& traits = tensor::traits(t.type);
        if (t.ne[0] % traits.block_size != 0)
            throw Error(file_.path() + ": tensor " + name + " rows of " + std::to_string(t.ne[0]) +
                        " are not whole " + std::string(traits.name) + " blocks");
        return MatrixView{&traits, t.data, t.ne[0], t.rows(), tensor::row_bytes(traits, t.ne[0])};
    }
    std::optional<MatrixView> optional_matrix(const std::string& name, const std::vector<int64_t>& expected) const {
        if (!find(name)) return std::nullopt;
        return matrix(name, expected);
    }

    // A tensor decoded to f32 (norm weights, scores, biases, conv taps).
    std::vector<float> values(const std::string& name, const std::vector<int64_t>& expected) const {
        const gguf::TensorInfo& t = tensor(name, expected);
        const tensor::TypeTraits& traits = tensor::traits(t.type);
        std::vector<float> out(size_t(t.n_elements));
        const size_t row = tensor::row_bytes(traits, t.ne[0]);
        for (int64_t r = 0; r < t.rows(); ++r) traits.dequantize_row(t.data + r * row, out.data() + r * t.ne[0], t.ne[0]);
        return out;
    }
    std::vector<float> optional_values(const std::string& name, const std::vector<int64_t>& expected) const {
        if (!find(name)) return {};
        return values(name, expected);
    }

private:
    const gguf::GgufFile& file_;
};

GluWeights bind_glu(const Binder& b, const std::string& prefix, const std::string& suffix, int64_t n_in, int64_t width,
                    int64_t n_out) {
    return GluWeights{b.matrix(prefix + "ffn_gate" + suffix, {n_in, width}),
                      b.matrix(prefix + "ffn_up" + suffix, {n_in, width}),
                      b.matrix(prefix + "ffn_down" + suffix, {width, n_out})};
}

// Width of an optional FFN read from its gate tensor (shared experts: expert_ff * n_shared).
int64_t tensor_rows(const Binder& b, const std::string& name) {
    const gguf::TensorInfo* t = b.find(name);
    return t && t->ne.size() >= 2 ? t->ne[1] : 0;
}

KdaWeights bind_kda(const Binder& b, const std::string& p, const HParams& hp, int64_t il) {
    KdaWeights w;
    const int64_t E = hp.n_embd, H = hp.n_head[size_t(il)], D = hp.kda_head_dim, I = H * D, K = hp.conv_kernel;
    w.n_head = H;
    w.head_dim = D;
    w.q = b.matrix(p + "attn_q.weight", {E, I});
    w.k = b.matrix(p + "attn_k.weight", {E, I});
    w.v = b.matrix(p + "attn_v.weight", {E, I});
    // Stored [K, 1, I, 1] by the converter, [K, 1, I] after quantize tools, [K, I] squeezed.
    w.conv_q = b.values(p + "ssm_conv1d_q.weight", {K, 1, I});
    w.conv_k = b.values(p + "ssm_conv1d_k.weight", {K, 1, I});
    w.conv_v = b.values(p + "ssm_conv1d_v.weight", {K, 1, I});
    const int64_t rank = tensor_rows(b, p + "ssm_f_a.weight");
    w.f_a = b.matrix(p + "ssm_f_a.weight", {E, rank > 0 ? rank : D});
    w.f_b = b.matrix(p + "ssm_f_b.weight", {w.f_a.rows, I});
    w.dt_bias = b.values(p + "ssm_dt.bias", {I});
    w.a = b.values(p + "ssm_a", {H});
    w.beta = b.matrix(p + "ssm_beta.weight", {E, H});
    w.g = b.matrix(p + "ssm_g.weight", {E, I});
    w.norm = b.values(p + "ssm_norm.weight", {D});
    w.out = b.matrix(p + "attn_output.weight", {I, E});
    return w;
}

MlaWeights bind_mla(const Binder& b, const std::string& p, const HParams& hp, int64_t il) {
    MlaWeights w;
    const int64_t E = hp.n_embd, H = hp.n_head[size_t(il)], Dk = hp.key_length_mla, Dv = hp.value_length_mla;
    const int64_t Lkv = hp.kv_lora_rank, Dr = hp.rope_dim, Dn = hp.nope_dim();
    w.n_head = H;
    if (b.find(p + "attn_q_a_norm.weight")) {
        const gguf::TensorInfo* norm = b.find(p + "attn_q_a_norm.weight");
        const int64_t Lq = hp.q_lora_rank > 0 ? hp.q_lora_rank : norm->ne[0];
        w.q_a_norm = b.values(p + "attn_q_a_norm.weight", {Lq});
        w.q_a = b.matrix(p + "attn_q_a.weight", {E, Lq});
        w.q_b = b.matrix(p + "attn_q_b.weight", {Lq, H * Dk});
    } else {
        w.q = b.matrix(p + "attn_q.weight", {E, H * Dk});
    }
    w.kv_a = b.matrix(p + "attn_kv_a_mqa.weight", {E, Lkv + Dr});
    w.kv_a_norm = b.values(p + "attn_kv_a_norm.weight", {Lkv});
    if (!b.find(p + "attn_k_b.weight") && b.find(p + "attn_kv_b.weight"))
        throw Error("tensor " + p + "attn_kv_b.weight (un-split MLA) is not supported; expected attn_k_b and attn_v_b");
    w.k_b = b.matrix(p + "attn_k_b.weight", {Dn, Lkv, H});
    w.v_b = b.matrix(p + "attn_v_b.weight", {Lkv, Dv, H});
    w.gate = b.optional_matrix(p + "attn_gate.weight", {E, H * Dv});
    w.out = b.matrix(p + "attn_output.weight", {H * Dv, E});
    return w;
}

MoeWeights bind_moe(const Binder& b, const std::string& p, const HParams& hp) {
    MoeWeights w;
    const int64_t E = hp.n_embd, X = hp.n_expert, Fe = hp.expert_ff;
    const int64_t Ls = hp.expert_latent > 0 ? hp.expert_latent : E;
    w.expert_width = Fe;
    w.expert_io = Ls;
    w.router = b.matrix(p + "ffn_gate_inp.weight", {E, X});
    w.selection_bias = b.optional_values(p + "exp_probs_b.bias", {X});
    w.gate_exps = b.matrix(p + "ffn_gate_exps.weight", {Ls, Fe, X});
    w.up_exps = b.matrix(p + "ffn_up_exps.weight", {Ls, Fe, X});
    w.down_exps = b.matrix(p + "ffn_down_exps.weight", {Fe, Ls, X});
    if (hp.expert_latent > 0) {
        w.routed_down = b.matrix(p + "ffn_routed_down.weight", {E, Ls});
        w.routed_up = b.matrix(p + "ffn_routed_up.weight", {Ls, E});
    }
    w.routed_norm = b.optional_values(p + "ffn_routed_norm.weight", {Ls});
    if (b.find(p + "ffn_gate_shexp.weight")) {
        const int64_t Fs = tensor_rows(b, p + "ffn_gate_shexp.weight");
        if (hp.n_expert_shared > 0 && Fs != Fe * hp.n_expert_shared)
            throw Error("tensor " + p + "ffn_gate_shexp.weight has width " + std::to_string(Fs) +
                        ", expected expert_feed_forward_length * expert_shared_count = " +
                        std::to_string(Fe * hp.n_expert_shared));
        w.shared = bind_glu(b, p, "_shexp.weight", E, Fs, E);
    }
    return w;
}

}  // namespace

ModelWeights ModelWeights::bind(const gguf::GgufFile& file, HParams& hp) {
    const Binder b(file);
    const int64_t E = hp.n_embd;
    if (hp.n_vocab == 0) hp.n_vocab = tensor_rows(b, "token_embd.weight");
    const int64_t V = hp.n_vocab;
    const bool attn_res = hp.attn_res_block_size > 0;
    ModelWeights w;
    w.token_embd = b.matrix("token_embd.weight", {E, V});
    w.output_norm = b.values("output_norm.weight", {E});
    w.output = b.matrix("output.weight", {E, V});
    if (attn_res) w.output_res_score = b.values("output_res_score.weight", {E});
    w.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights& layer = w.layers[size_t(il)];
        layer.attn_norm = b.values(p + "attn_norm.weight", {E});
        layer.ffn_norm = b.values(p + "ffn_norm.weight", {E});
        if (attn_res) {
            layer.attn_res_score = b.values(p + "attn_res_score.weight", {E});
            layer.ffn_res_score = b.values(p + "ffn_res_score.weight", {E});
        }
        if (hp.is_mla(il)) layer.mla = bind_mla(b, p, hp, il);
        else layer.kda = bind_kda(b, p, hp, il);
        if (hp.is_dense_ffn(il)) {
            const int64_t F = hp.n_ff[size_t(il)] > 0 ? hp.n_ff[size_t(il)] : tensor_rows(b, p + "ffn_gate.weight");
            layer.dense = bind_glu(b, p, ".weight", E, F, E);
        } else {
            layer.moe = bind_moe(b, p, hp);
        }
    }
    return w;
}

}  // namespace k3::model
