#include "model/hparams.h"

#include "gguf/gguf_file.h"
#include "util/error.h"

namespace k3::model {

namespace {

constexpr const char* kArch = "kimi-k3";

std::string key(const std::string& name) { return std::string(kArch) + "." + name; }

class KeyReader {
public:
    explicit KeyReader(const gguf::GgufFile& file) : file_(file) {}

    int64_t required_uint(const std::string& name) const {
        if (auto v = file_.get_uint(key(name))) return int64_t(*v);
        throw missing(name);
    }
    int64_t optional_uint(const std::string& name, int64_t fallback) const {
        if (auto v = file_.get_uint(key(name))) return int64_t(*v);
        return fallback;
    }
    float required_float(const std::string& name) const {
        if (auto v = file_.get_float(key(name))) return float(*v);
        throw missing(name);
    }
    std::optional<float> optional_float(const std::string& name) const {
        if (auto v = file_.get_float(key(name))) return float(*v);
        return std::nullopt;
    }
    // A per-layer value given as a scalar or as an array of n_layer integers.
    std::optional<std::vector<int64_t>> per_layer(const std::string& name, int64_t n_layer) const {
        auto values = file_.get_int_array(key(name));
        if (!values) return std::nullopt;
        if (values->size() == 1) return std::vector<int64_t>(size_t(n_layer), values->front());
        if (int64_t(values->size()) != n_layer)
            throw Error(file_.path() + ": key " + key(name) + " has " + std::to_string(values->size()) +
                        " entries, expected 1 or block_count = " + std::to_string(n_layer));
        for (int64_t v : *values)
            if (v < 0) throw Error(file_.path() + ": key " + key(name) + " has a negative entry");
        return values;
    }
    Error missing(const std::string& name) const {
        return Error(file_.path() + ": required key " + key(name) + " is missing");
    }
    Error invalid(const std::string& name, const std::string& why) const {
        return Error(file_.path() + ": key " + key(name) + ": " + why);
    }

private:
    const gguf::GgufFile& file_;
};

}  // namespace

bool HParams::has_mla_layers() const {
    for (int64_t il = 0; il < n_layer; ++il)
        if (is_mla(il)) return true;
    return false;
}

HParams HParams::from_gguf(const gguf::GgufFile& file) {
    const auto arch = file.get_string("general.architecture");
    if (arch != kArch)
        throw Error(file.path() + ": general.architecture is '" + arch.value_or("(missing)") +
                    "', expected 'kimi-k3'");
    const KeyReader keys(file);
    HParams hp;
    hp.n_layer = keys.required_uint("block_count");
    hp.n_embd = keys.required_uint("embedding_length");
    hp.n_ctx_train = keys.required_uint("context_length");
    hp.rms_eps = keys.required_float("attention.layer_norm_rms_epsilon");
    hp.n_vocab = keys.optional_uint("vocab_size", 0);  // else from token_embd (weights.cpp)
    if (hp.n_layer <= 0) throw keys.invalid("block_count", "must be positive");
    if (hp.n_embd <= 0) throw keys.invalid("embedding_length", "must be positive");

    const size_t n = size_t(hp.n_layer);
    hp.n_head = keys.per_layer("attention.head_count", hp.n_layer).value_or(std::vector<int64_t>());
    if (hp.n_head.empty()) throw keys.missing("attention.head_count");
    hp.n_head_kv = keys.per_layer("attention.head_count_kv", hp.n_layer).value_or(std::vector<int64_t>(n, 0));
    hp.n_ff = keys.per_layer("feed_forward_length", hp.n_layer).value_or(std::vector<int64_t>(n, 0));

    hp.n_dense_lead = keys.optional_uint("leading_dense_block_count", 0);
    bool has_kda = false;
    for (int64_t il = 0; il < hp.n_layer; ++il) has_kda |= !hp.is_mla(il);

    if (has_kda) {
        hp.kda_head_dim = keys.required_uint("kda.head_dim");
        hp.conv_kernel = keys.required_uint("ssm.conv_kernel");
        hp.gate_lower_bound = keys.optional_float("kda.gate_lower_bound");
        if (hp.kda_head_dim <= 0) throw keys.invalid("kda.head_dim", "must be positive");
        if (hp.conv_kernel <= 0) throw keys.invalid("ssm.conv_kernel", "must be positive");
    }
    if (hp.has_mla_layers()) {
        hp.kv_lora_rank = keys.required_uint("attention.kv_lora_rank");
        hp.key_length_mla = keys.required_uint("attention.key_length_mla");
        hp.value_length_mla = keys.required_uint("attention.value_length_mla");
        hp.q_lora_rank = keys.optional_uint("attention.q_lora_rank", 0);
        // The rope part: its own key, else the MLA cache row width minus the latent.
        const int64_t key_length = keys.optional_uint("attention.key_length", -1);
        hp.rope_dim = keys.optional_uint("rope.dimension_count",
                                         key_length >= hp.kv_lora_rank ? key_length - hp.kv_lora_rank : -1);
        if (hp.rope_dim < 0) throw keys.missing("rope.dimension_count");
        if (hp.rope_dim > hp.key_length_mla)
            throw keys.invalid("rope.dimension_count", "exceeds attention.key_length_mla");
    }
    if (hp.has_moe_layers()) {
        hp.n_expert = keys.required_uint("expert_count");
        hp.n_expert_used = keys.required_uint("expert_used_count");
        hp.expert_ff = keys.required_uint("expert_feed_forward_length");
        hp.n_expert_shared = keys.optional_uint("expert_shared_count", 0);
        hp.expert_latent = keys.optional_uint("expert_latent_length", 0);
        hp.expert_weights_scale = keys.optional_float("expert_weights_scale").value_or(0.0f);
        hp.expert_weights_norm = file.get_bool(key("expert_weights_norm")).value_or(false);
        const int64_t gating = keys.required_uint("expert_gating_func");
        if (gating != 1 && gating != 2 && gating != 4)
            throw keys.invalid("expert_gating_func", "is " + std::to_string(gating) + ", expected 1, 2 or 4");
        hp.gating = GatingFunction(gating);
        if (hp.n_expert_used <= 0 || hp.n_expert_used > hp.n_expert)
            throw keys.invalid("expert_used_count", "must be in 1..expert_count");
    }
    hp.attn_res_block_size = keys.required_uint("attn_res.block_size");
    hp.situ_beta = keys.required_float("activation.situ_beta");
    hp.situ_linear_beta = keys.required_float("activation.situ_linear_beta");
    return hp;
}

}  // namespace k3::model
