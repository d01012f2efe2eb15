#include "convert/hf_config.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace k3::convert {
namespace {

using nlohmann::json;

// Field access with errors that name the file and the field.
class ConfigReader {
public:
    ConfigReader(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

    bool has(const char* key) const { return object_.contains(key) && !object_.at(key).is_null(); }

    int64_t integer(const char* key) const {
        const json& v = at(key);
        if (!v.is_number_integer() || v.get<int64_t>() < 0) throw bad(key, "a non-negative integer", v);
        return v.get<int64_t>();
    }
    int64_t integer_or(const char* key, int64_t fallback) const { return has(key) ? integer(key) : fallback; }
    std::optional<int64_t> optional_integer(const char* key) const {
        return has(key) ? std::optional<int64_t>(integer(key)) : std::nullopt;
    }
    float number(const char* key) const {
        const json& v = at(key);
        if (!v.is_number()) throw bad(key, "a number", v);
        return v.get<float>();
    }
    float number_or(const char* key, float fallback) const { return has(key) ? number(key) : fallback; }
    bool boolean_or(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (!v.is_boolean()) throw bad(key, "true or false", v);
        return v.get<bool>();
    }
    std::string string_or(const char* key, std::string fallback) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (!v.is_string()) throw bad(key, "a string", v);
        return v.get<std::string>();
    }
    ConfigReader child(const char* key) const {
        const json& v = at(key);
        if (!v.is_object()) throw bad(key, "an object", v);
        return ConfigReader(v, where_ + "." + key);
    }
    const json& at(const char* key) const {
        if (!has(key)) throw Error(where_ + "." + key + " is missing");
        return object_.at(key);
    }
    Error bad(const char* key, const char* expected, const json& v) const {
        return Error(where_ + "." + key + ": expected " + expected + ", got " + v.dump());
    }
    const std::string& where() const { return where_; }

private:
    const json& object_;
    std::string where_;
};

gguf::Value u32(int64_t v) { return {gguf::ValueType::UINT32, uint64_t(v)}; }
gguf::Value f32(float v) { return {gguf::ValueType::FLOAT32, double(v)}; }
gguf::Value boolean(bool v) { return {gguf::ValueType::BOOL, v}; }

}  // namespace

K3Config read_k3_config(const std::string& config_path) {
    json top;
    {
        std::ifstream in(config_path, std::ios::binary);
        if (!in) throw Error(config_path + ": cannot open");
        try {
            top = json::parse(in);
        } catch (const json::exception& e) {
            throw Error(config_path + ": not valid JSON: " + e.what());
        }
    }
    if (!top.is_object()) throw Error(config_path + ": not a JSON object");
    // text_config wins over the top level, as in llama.cpp; vision_config is not read.
    json merged = top;
    if (top.contains("text_config")) {
        if (!top["text_config"].is_object()) throw Error(config_path + ": text_config is not an object");
        merged.erase("text_config");
        for (const auto& [key, value] : top["text_config"].items()) merged[key] = value;
    }
    const ConfigReader c(merged, config_path);

    K3Config k;
    k.n_layer = c.integer("num_hidden_layers");
    k.n_embd = c.integer("hidden_size");
    k.n_vocab = c.integer("vocab_size");
    k.n_ff = c.integer("intermediate_size");
    k.n_head = c.integer("num_attention_heads");
    k.context_length = c.integer("max_position_embeddings");
    k.rms_eps = c.number("rms_norm_eps");
    k.situ_beta = c.number("activation_situ_beta");
    k.situ_linear_beta = c.number("activation_situ_linear_beta");

    k.q_lora_rank = c.optional_integer("q_lora_rank");
    k.kv_lora_rank = c.integer("kv_lora_rank");
    k.qk_nope_dim = c.integer("qk_nope_head_dim");
    k.qk_rope_dim = c.integer("qk_rope_head_dim");
    k.v_head_dim = c.integer("v_head_dim");
    k.mla_output_gate = c.boolean_or("mla_use_output_gate", true);

    const ConfigReader linear = c.child("linear_attn_config");
    k.kda_head_dim = linear.integer("head_dim");
    k.conv_kernel = linear.integer("short_conv_kernel_size");
    if (linear.has("gate_lower_bound")) k.gate_lower_bound = linear.number("gate_lower_bound");
    if (linear.integer("num_heads") != k.n_head)
        throw Error(linear.where() + ".num_heads (" + std::to_string(linear.integer("num_heads")) +
                    ") differs from num_attention_heads (" + std::to_string(k.n_head) +
                    "); GGUF has one attention.head_count for both");
    if (!linear.boolean_or("use_full_rank_gate", true))
        throw Error(linear.where() + ".use_full_rank_gate is false; only the full-rank KDA output gate (ssm_g) is supported");
    k.is_mla.assign(size_t(k.n_layer), false);
    const json& full = linear.at("full_attn_layers");
    if (!full.is_array()) throw linear.bad("full_attn_layers", "an array of 1-based layer numbers", full);
    for (const json& layer : full) {
        if (!layer.is_number_integer() || layer.get<int64_t>() < 1 || layer.get<int64_t>() > k.n_layer)
            throw linear.bad("full_attn_layers", "1-based layer numbers within num_hidden_layers", layer);
        k.is_mla[size_t(layer.get<int64_t>() - 1)] = true;
    }

    k.n_expert = c.integer("num_experts");
    k.n_expert_used = c.integer("num_experts_per_token");
    k.n_expert_shared = c.integer_or("num_shared_experts", 0);
    k.expert_ff = c.integer("moe_intermediate_size");
    k.expert_latent = c.integer_or("routed_expert_hidden_size", 0);
    k.latent_norm = k.expert_latent > 0 && c.boolean_or("latent_moe_use_norm", false);
    k.n_dense_lead = c.integer_or("first_k_dense_replace", 0);
    if (c.integer_or("moe_layer_freq", 1) != 1)
        throw Error(config_path + ": moe_layer_freq " + std::to_string(c.integer("moe_layer_freq")) +
                    " is not supported (every layer after first_k_dense_replace must be MoE)");
    k.topk_group = c.optional_integer("topk_group");
    k.routed_scale = c.number_or("routed_scaling_factor", 1.0f);
    k.renormalize = c.boolean_or("moe_renormalize", false);
    const std::string router = c.string_or("moe_router_activation_func", "sigmoid");
    if (router == "sigmoid") k.gating_func = 2;
    else if (router == "softmax") k.gating_func = 1;
    else throw Error(config_path + ": moe_router_activation_func \"" + router + "\" is not sigmoid or softmax");
    k.attn_res_block = c.integer_or("attn_res_block_size", 0);

    k.bos_id = c.optional_integer("bos_token_id");
    k.eos_id = c.optional_integer("eos_token_id");
    k.pad_id = c.optional_integer("pad_token_id");
    k.unk_id = c.optional_integer("unk_token_id");

    if (k.n_layer == 0 || k.n_embd == 0 || k.n_head == 0 || k.kda_head_dim == 0)
        throw Error(config_path + ": num_hidden_layers, hidden_size, num_attention_heads and head_dim must be positive");
    if (k.n_dense_lead > k.n_layer)
        throw Error(config_path + ": first_k_dense_replace " + std::to_string(k.n_dense_lead) + " exceeds num_hidden_layers");
    return k;
}

std::vector<std::pair<std::string, gguf::Value>> k3_hparam_metadata(const K3Config& k) {
    std::vector<std::pair<std::string, gguf::Value>> m;
    auto add = [&](const char* key, gguf::Value v) { m.emplace_back(std::string("kimi-k3.") + key, std::move(v)); };

    add("block_count", u32(k.n_layer));
    add("context_length", u32(k.context_length));
    add("embedding_length", u32(k.n_embd));
    add("feed_forward_length", u32(k.n_ff));
    add("attention.head_count", u32(k.n_head));
    gguf::Array head_count_kv{gguf::ValueType::INT32, {}};  // 1 on MLA layers, 0 marks KDA
    for (bool mla : k.is_mla) head_count_kv.items.push_back({gguf::ValueType::INT32, int64_t(mla ? 1 : 0)});
    add("attention.head_count_kv", {gguf::ValueType::ARRAY, std::move(head_count_kv)});
    add("attention.layer_norm_rms_epsilon", f32(k.rms_eps));
    add("expert_count", u32(k.n_expert));
    add("expert_used_count", u32(k.n_expert_used));
    if (k.topk_group) add("expert_group_used_count", u32(*k.topk_group));
    add("expert_gating_func", u32(k.gating_func));
    add("vocab_size", u32(k.n_vocab));
    add("ssm.conv_kernel", u32(k.conv_kernel));
    add("kda.head_dim", u32(k.kda_head_dim));
    if (k.gate_lower_bound) add("kda.gate_lower_bound", f32(*k.gate_lower_bound));
    if (k.q_lora_rank) add("attention.q_lora_rank", u32(*k.q_lora_rank));
    add("attention.kv_lora_rank", u32(k.kv_lora_rank));
    add("rope.dimension_count", u32(k.qk_rope_dim));
    add("attention.key_length", u32(k.kv_lora_rank + k.qk_rope_dim));  // MLA cache row: latent + rope part
    add("attention.value_length", u32(k.kv_lora_rank));
    add("attention.key_length_mla", u32(k.qk_nope_dim + k.qk_rope_dim));
    add("attention.value_length_mla", u32(k.v_head_dim));
    add("expert_feed_forward_length", u32(k.expert_ff));
    add("expert_shared_count", u32(k.n_expert_shared));
    add("leading_dense_block_count", u32(k.n_dense_lead));
    add("expert_weights_scale", f32(k.routed_scale));
    add("expert_weights_norm", boolean(k.renormalize));
    if (k.expert_latent > 0) add("expert_latent_length", u32(k.expert_latent));
    add("activation.situ_beta", f32(k.situ_beta));
    add("activation.situ_linear_beta", f32(k.situ_linear_beta));
    add("attn_res.block_size", u32(k.attn_res_block));
    return m;
}

}  // namespace k3::convert
