#include "convert/tensor_plan.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "tensor/block_mxfp4.h"
#include "util/error.h"

namespace k3::convert {
namespace {

using Shape = std::vector<int64_t>;  // PyTorch order (slowest first)

std::string shape_text(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

Shape reversed(Shape shape) {
    std::reverse(shape.begin(), shape.end());
    return shape;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Checkpoint prefixes that belong to the vision model, which k3 does not convert.
constexpr std::string_view kVisionPrefixes[] = {"vision_tower.", "mm_projector.", "vision_model.", "multi_modal_projector."};

// Write order: experts first by layer (gate, down, up), then everything else where its last
// source appears in the checkpoint, as llama.cpp's converter orders them.
using OrderKey = std::tuple<int, int64_t, int, int64_t>;

class Planner {
public:
    Planner(const K3Config& k, const SafetensorsCheckpoint& checkpoint, const PlanOptions& options)
        : k_(k), checkpoint_(checkpoint), options_(options), consumed_(checkpoint.tensors().size(), false) {
        for (const SafeTensor& t : checkpoint.tensors())
            if (starts_with(t.name, "language_model.")) prefix_ = "language_model.";
    }

    ConversionPlan run() {
        const int64_t E = k_.n_embd, V = k_.n_vocab;
        copy("model.embed_tokens.weight", "token_embd.weight", {V, E});
        copy("model.norm.weight", "output_norm.weight", {E});
        copy("lm_head.weight", "output.weight", {V, E});
        if (k_.attn_res_block > 0) res_score("model.output_attn_res_", "output_res_score.weight");
        for (int64_t il = 0; il < k_.n_layer; ++il) layer(il);
        collect_leftovers();
        if (!problems_.empty()) {
            std::string message = problems_.front();
            if (problems_.size() > 1) message += " (and " + std::to_string(problems_.size() - 1) + " more problems)";
            throw Error(message);
        }
        std::stable_sort(planned_.begin(), planned_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& [key, tensor] : planned_) plan_.tensors.push_back(std::move(tensor));
        return std::move(plan_);
    }

private:
    void layer(int64_t il) {
        const std::string hf = "model.layers." + std::to_string(il) + ".";
        const std::string blk = "blk." + std::to_string(il) + ".";
        const int64_t E = k_.n_embd;
        copy(hf + "input_layernorm.weight", blk + "attn_norm.weight", {E});
        copy(hf + "post_attention_layernorm.weight", blk + "ffn_norm.weight", {E});
        if (k_.attn_res_block > 0) {
            res_score(hf + "self_attention_res_", blk + "attn_res_score.weight");
            res_score(hf + "mlp_res_", blk + "ffn_res_score.weight");
        }
        if (k_.is_mla[size_t(il)]) mla(hf + "self_attn.", blk);
        else kda(hf + "self_attn.", blk);
        if (k_.is_moe_layer(il)) moe(il, hf + "block_sparse_moe.", blk);
        else dense(hf + "mlp.", blk);
    }

    // KDA mixer (§2.3): H heads of D, width I = H*D, conv kernel K.
    void kda(const std::string& hf, const std::string& blk) {
        const int64_t E = k_.n_embd, H = k_.n_head, D = k_.kda_head_dim, I = k_.kda_width(), K = k_.conv_kernel;
        for (const char* x : {"q", "k", "v"}) {
            copy(hf + x + "_proj.weight", blk + "attn_" + x + ".weight", {I, E});
            // HF [I, 1, K] (or [I, K]) -> ggml [K, 1, I, 1]: the same bytes, one channel's taps contiguous.
            const std::string conv = hf + x + "_conv1d.weight";
            const SafeTensor* t = take(conv, std::nullopt);
            if (t && t->shape != Shape{I, 1, K} && t->shape != Shape{I, K})
                problem(name_of(conv) + ": shape " + shape_text(t->shape) + ", expected " + shape_text({I, 1, K}));
            add(blk + "ssm_conv1d_" + x + ".weight", {K, 1, I, 1}, Recipe::Copy, {t});
        }
        copy(hf + "f_a_proj.weight", blk + "ssm_f_a.weight", {D, E});
        copy(hf + "f_b_proj.weight", blk + "ssm_f_b.weight", {I, D});
        copy(hf + "b_proj.weight", blk + "ssm_beta.weight", {H, E});
        // A_log holds head_dim entries in the release (per-head values, then zeros); keep H.
        const SafeTensor* a_log = take(hf + "A_log", std::nullopt);
        if (a_log && a_log->n_elements < H)
            problem(name_of(hf + "A_log") + ": " + std::to_string(a_log->n_elements) + " values, expected at least " + std::to_string(H) + " (one per head)");
        add(blk + "ssm_a", {H}, Recipe::NegExpHeads, {a_log});
        copy(hf + "dt_bias", blk + "ssm_dt.bias", {I});
        copy(hf + "g_proj.weight", blk + "ssm_g.weight", {I, E});
        copy(hf + "o_norm.weight", blk + "ssm_norm.weight", {D});
        copy(hf + "o_proj.weight", blk + "attn_output.weight", {E, I});
    }

    // Gated NoPE MLA mixer (§2.4).
    void mla(const std::string& hf, const std::string& blk) {
        const int64_t E = k_.n_embd, H = k_.n_head, Dn = k_.qk_nope_dim, Dr = k_.qk_rope_dim, Dv = k_.v_head_dim;
        const int64_t Lkv = k_.kv_lora_rank;
        if (k_.q_lora_rank) {
            const int64_t Lq = *k_.q_lora_rank;
            copy(hf + "q_a_proj.weight", blk + "attn_q_a.weight", {Lq, E});
            copy(hf + "q_a_layernorm.weight", blk + "attn_q_a_norm.weight", {Lq});
            copy(hf + "q_b_proj.weight", blk + "attn_q_b.weight", {H * (Dn + Dr), Lq});
        } else {
            copy(hf + "q_proj.weight", blk + "attn_q.weight", {H * (Dn + Dr), E});
        }
        copy(hf + "kv_a_proj_with_mqa.weight", blk + "attn_kv_a_mqa.weight", {Lkv + Dr, E});
        copy(hf + "kv_a_layernorm.weight", blk + "attn_kv_a_norm.weight", {Lkv});
        const SafeTensor* kv_b = take(hf + "kv_b_proj.weight", Shape{H * (Dn + Dv), Lkv});
        add(blk + "attn_k_b.weight", {Dn, Lkv, H}, Recipe::KvbToKb, {kv_b}, 0);
        add(blk + "attn_v_b.weight", {Lkv, Dv, H}, Recipe::KvbToVb, {kv_b}, 1);
        if (k_.mla_output_gate) copy(hf + "g_proj.weight", blk + "attn_gate.weight", {H * Dv, E});
        copy(hf + "o_proj.weight", blk + "attn_output.weight", {E, H * Dv});
    }

    void dense(const std::string& hf, const std::string& blk) {
        const int64_t E = k_.n_embd, F = k_.n_ff;
        copy(hf + "gate_proj.weight", blk + "ffn_gate.weight", {F, E});
        copy(hf + "up_proj.weight", blk + "ffn_up.weight", {F, E});
        copy(hf + "down_proj.weight", blk + "ffn_down.weight", {E, F});
    }

    // Latent MoE (§2.6): router at full width, experts in the latent space, shared experts.
    void moe(int64_t il, const std::string& hf, const std::string& blk) {
        const int64_t E = k_.n_embd, X = k_.n_expert, Ls = k_.expert_in(), Fe = k_.expert_ff;
        const int64_t Fs = Fe * k_.n_expert_shared;
        copy(hf + "gate.weight", blk + "ffn_gate_inp.weight", {X, E});
        copy(hf + "gate.e_score_correction_bias", blk + "exp_probs_b.bias", {X});
        experts(il, hf + "experts.", "w1", blk + "ffn_gate_exps.weight", Fe, Ls, 0);
        experts(il, hf + "experts.", "w2", blk + "ffn_down_exps.weight", Ls, Fe, 1);
        experts(il, hf + "experts.", "w3", blk + "ffn_up_exps.weight", Fe, Ls, 2);
        if (k_.expert_latent > 0) {
            copy(hf + "routed_expert_down_proj.weight", blk + "ffn_routed_down.weight", {Ls, E});
            copy(hf + "routed_expert_up_proj.weight", blk + "ffn_routed_up.weight", {E, Ls});
            if (k_.latent_norm) copy(hf + "routed_expert_norm.weight", blk + "ffn_routed_norm.weight", {Ls});
        }
        if (Fs > 0) {
            copy(hf + "shared_experts.gate_proj.weight", blk + "ffn_gate_shexp.weight", {Fs, E});
            copy(hf + "shared_experts.up_proj.weight", blk + "ffn_up_shexp.weight", {Fs, E});
            copy(hf + "shared_experts.down_proj.weight", blk + "ffn_down_shexp.weight", {E, Fs});
        }
    }

    // One projection of every expert, each [rows, cols], stacked to ggml [cols, rows, X].
    void experts(int64_t il, const std::string& hf, const std::string& w, const std::string& gguf, int64_t rows,
                 int64_t cols, int order) {
        const bool mxfp4 = exists(hf + "0." + w + ".weight_packed");
        std::vector<const SafeTensor*> sources;
        bool complete = true;
        for (int64_t e = 0; e < k_.n_expert; ++e) {
            const std::string base = hf + std::to_string(e) + "." + w + ".";
            if (!mxfp4) {
                const SafeTensor* t = take(base + "weight", Shape{rows, cols});
                complete = complete && t;
                sources.push_back(t);
                continue;
            }
            if (cols % tensor::kMxfp4BlockSize != 0) {
                problem(name_of(base + "weight_packed") + ": " + std::to_string(cols) + " columns are not a multiple of the MXFP4 group of 32");
                return;
            }
            const SafeTensor* packed = take(base + "weight_packed", Shape{rows, cols / 2}, Dtype::U8);
            const SafeTensor* scale = take(base + "weight_scale", Shape{rows, cols / 32}, Dtype::U8);
            complete = complete && packed && scale;
            sources.push_back(packed);
            sources.push_back(scale);
        }
        if (!complete) return;
        if (mxfp4) {
            plan_.experts_mxfp4 = true;
            plan_.n_mxfp4_pairs += k_.n_expert;
        }
        PlannedTensor t{gguf, mxfp4 ? tensor::Type::MXFP4 : float_type(gguf, {cols, rows, k_.n_expert}),
                        {cols, rows, k_.n_expert}, mxfp4 ? Recipe::StackMxfp4 : Recipe::StackExperts, std::move(sources)};
        planned_.emplace_back(OrderKey{0, il, order, 0}, std::move(t));
    }

    // *_res_norm.weight [E] and *_res_proj.weight [1, E] fuse into one F32 score vector [E].
    void res_score(const std::string& hf_stem, const std::string& gguf) {
        const std::string norm = hf_stem + "norm.weight", proj = hf_stem + "proj.weight";
        const bool has_norm = exists(norm), has_proj = exists(proj);
        if (has_norm != has_proj) {
            problem(name_of(has_norm ? norm : proj) + " has no matching " + name_of(has_norm ? proj : norm));
            consumed_[index_of(checkpoint_.find(name_of(has_norm ? norm : proj)))] = true;
            return;
        }
        const SafeTensor* n = take(norm, Shape{k_.n_embd});
        const SafeTensor* p = take(proj, Shape{1, k_.n_embd});
        add(gguf, {k_.n_embd}, Recipe::ResScore, {n, p});
    }

    void copy(const std::string& hf, const std::string& gguf, const Shape& shape) {
        add(gguf, reversed(shape), Recipe::Copy, {take(hf, shape)});
    }

    void add(const std::string& gguf, Shape ne, Recipe recipe, std::vector<const SafeTensor*> sources, int sub = 0) {
        int64_t last = -1;
        for (const SafeTensor* s : sources) {
            if (!s) return;  // already reported
            if (!ggml_type_of(s->dtype)) {
                problem("tensor " + s->name + " has dtype " + std::string(dtype_name(s->dtype)) + ", which k3 convert cannot read as numbers" +
                        (s->dtype == Dtype::F8_E4M3 || s->dtype == Dtype::F8_E5M2 ? " (FP8 checkpoints are unsupported)" : ""));
                return;
            }
            last = std::max(last, int64_t(index_of(s)));
        }
        const tensor::Type type = float_type(gguf, ne);
        planned_.emplace_back(OrderKey{1, last, sub, 0}, PlannedTensor{gguf, type, std::move(ne), recipe, std::move(sources)});
    }

    tensor::Type float_type(const std::string& gguf, const Shape& ne) const {
        return keeps_f32(gguf, ne) ? tensor::Type::F32 : block_compatible_type(options_.outtype, ne[0]);
    }

    std::string name_of(const std::string& hf) const { return prefix_ + hf; }
    bool exists(const std::string& hf) const { return checkpoint_.find(name_of(hf)) != nullptr; }
    size_t index_of(const SafeTensor* t) const { return size_t(t - checkpoint_.tensors().data()); }

    // Marks a checkpoint tensor as used; null (and a problem noted) if it is missing, has the
    // wrong shape or the wrong dtype.
    const SafeTensor* take(const std::string& hf, const std::optional<Shape>& shape, std::optional<Dtype> dtype = std::nullopt) {
        const SafeTensor* t = checkpoint_.find(name_of(hf));
        if (!t) {
            problem("missing tensor " + name_of(hf));
            return nullptr;
        }
        consumed_[index_of(t)] = true;
        ++plan_.n_source_tensors;
        if (shape && t->shape != *shape) {
            problem(t->name + ": shape " + shape_text(t->shape) + ", expected " + shape_text(*shape));
            return nullptr;
        }
        if (dtype && t->dtype != *dtype) {
            problem(t->name + ": dtype " + std::string(dtype_name(t->dtype)) + ", expected " + std::string(dtype_name(*dtype)));
            return nullptr;
        }
        return t;
    }

    void collect_leftovers() {
        const std::vector<SafeTensor>& all = checkpoint_.tensors();
        for (size_t i = 0; i < all.size(); ++i) {
            if (consumed_[i]) continue;
            const std::string& name = all[i].name;
            const bool vision = std::any_of(std::begin(kVisionPrefixes), std::end(kVisionPrefixes),
                                            [&](std::string_view p) { return starts_with(name, p); });
            if (vision) plan_.skipped.push_back(name);
            else problem("unexpected tensor " + name + " (not part of the K3 text model this config describes)");
        }
    }

    void problem(std::string message) { problems_.push_back(std::move(message)); }

    const K3Config& k_;
    const SafetensorsCheckpoint& checkpoint_;
    const PlanOptions& options_;
    std::string prefix_;
    std::vector<bool> consumed_;
    std::vector<std::string> problems_;
    std::vector<std::pair<OrderKey, PlannedTensor>> planned_;
    ConversionPlan plan_;
};

}  // namespace

int64_t PlannedTensor::n_elements() const {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    return n;
}

uint64_t PlannedTensor::n_bytes() const {
    const tensor::TypeTraits& t = tensor::traits(type);
    return uint64_t(n_elements() / t.block_size) * t.block_bytes;
}

bool keeps_f32(const std::string& name, const std::vector<int64_t>& ne) {
    const int64_t n_dims = int64_t(std::count_if(ne.begin(), ne.end(), [](int64_t d) { return d > 1; }));
    return n_dims <= 1 || ends_with(name, "_norm.weight") || ends_with(name, "_res_score.weight") || !ends_with(name, ".weight") ||
           ends_with(name, "ffn_gate_inp.weight") || name.find("ssm_conv1d") != std::string::npos;
}

tensor::Type block_compatible_type(tensor::Type wanted, int64_t ne0) {
    using tensor::Type;
    auto fits = [ne0](Type t) { return ne0 % int64_t(tensor::traits(t).block_size) == 0; };
    if (fits(wanted)) return wanted;
    Type fallback = Type::F16;
    switch (wanted) {  // llama-quantize's tensor_type_fallback
        case Type::IQ1_S: case Type::IQ1_M: case Type::IQ2_XXS: case Type::IQ2_XS: case Type::IQ2_S:
        case Type::IQ3_XXS: case Type::IQ3_S: case Type::IQ4_XS: fallback = Type::IQ4_NL; break;
        case Type::Q2_K: case Type::Q3_K: case Type::TQ1_0: case Type::TQ2_0: fallback = Type::Q4_0; break;
        case Type::Q4_K: fallback = Type::Q5_0; break;
        case Type::Q5_K: fallback = Type::Q5_1; break;
        case Type::Q6_K: fallback = Type::Q8_0; break;
        default: break;
    }
    return fits(fallback) ? fallback : Type::F16;
}

ConversionPlan plan_conversion(const K3Config& config, const SafetensorsCheckpoint& checkpoint, const PlanOptions& options) {
    return Planner(config, checkpoint, options).run();
}

}  // namespace k3::convert
