#include "convert/synthetic_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

namespace k3::testing {

K3Dims real_k3_dims() {
    K3Dims d{93, 7168, 163840, 33792, 96, 128, 4, 1536, 512, 128, 64, 128, 896, 16, 3072, 3584, 2, 12, 1, {}};
    for (int64_t il = 3; il < 93; il += 4) d.mla_layers.push_back(il);  // 3, 7, ..., 91
    d.mla_layers.push_back(92);
    return d;
}

std::vector<HfTensor> k3_hf_tensors(const K3Dims& d) {
    std::vector<HfTensor> t;
    const std::string lm = "language_model.";
    auto add = [&](const std::string& name, const std::string& dtype, std::vector<int64_t> shape) {
        t.push_back({lm + name, dtype, std::move(shape)});
    };
    const int64_t I = d.H * d.D;
    add("model.embed_tokens.weight", "BF16", {d.V, d.E});
    add("model.norm.weight", "BF16", {d.E});
    add("lm_head.weight", "BF16", {d.V, d.E});
    add("model.output_attn_res_norm.weight", "BF16", {d.E});
    add("model.output_attn_res_proj.weight", "BF16", {1, d.E});
    for (int64_t il = 0; il < d.n_layer; ++il) {
        const std::string p = "model.layers." + std::to_string(il) + ".";
        add(p + "input_layernorm.weight", "BF16", {d.E});
        add(p + "post_attention_layernorm.weight", "BF16", {d.E});
        for (const char* site : {"self_attention_res_", "mlp_res_"}) {
            add(p + site + "norm.weight", "BF16", {d.E});
            add(p + site + "proj.weight", "BF16", {1, d.E});
        }
        const std::string a = p + "self_attn.";
        if (std::find(d.mla_layers.begin(), d.mla_layers.end(), il) != d.mla_layers.end()) {
            add(a + "q_a_proj.weight", "BF16", {d.Lq, d.E});
            add(a + "q_a_layernorm.weight", "BF16", {d.Lq});
            add(a + "q_b_proj.weight", "BF16", {d.H * (d.Dn + d.Dr), d.Lq});
            add(a + "kv_a_proj_with_mqa.weight", "BF16", {d.Lkv + d.Dr, d.E});
            add(a + "kv_a_layernorm.weight", "BF16", {d.Lkv});
            add(a + "kv_b_proj.weight", "BF16", {d.H * (d.Dn + d.Dv), d.Lkv});
            add(a + "g_proj.weight", "BF16", {d.H * d.Dv, d.E});
            add(a + "o_proj.weight", "BF16", {d.E, d.H * d.Dv});
        } else {
            for (const char* x : {"q", "k", "v"}) {
                add(a + x + "_proj.weight", "BF16", {I, d.E});
                add(a + x + "_conv1d.weight", "F32", {I, 1, d.K});
            }
            add(a + "f_a_proj.weight", "BF16", {d.D, d.E});
            add(a + "f_b_proj.weight", "BF16", {I, d.D});
            add(a + "b_proj.weight", "BF16", {d.H, d.E});
            add(a + "A_log", "F32", {d.D});
            add(a + "dt_bias", "F32", {I});
            add(a + "g_proj.weight", "BF16", {I, d.E});
            add(a + "o_norm.weight", "F32", {d.D});
            add(a + "o_proj.weight", "BF16", {d.E, I});
        }
        if (il < d.n_dense) {
            add(p + "mlp.gate_proj.weight", "BF16", {d.F, d.E});
            add(p + "mlp.up_proj.weight", "BF16", {d.F, d.E});
            add(p + "mlp.down_proj.weight", "BF16", {d.E, d.F});
            continue;
        }
        const std::string m = p + "block_sparse_moe.";
        add(m + "gate.weight", "BF16", {d.X, d.E});
        add(m + "gate.e_score_correction_bias", "F32", {d.X});
        for (int64_t e = 0; e < d.X; ++e) {
            for (const char* w : {"w1", "w2", "w3"}) {
                const bool down = std::string(w) == "w2";
                const int64_t rows = down ? d.Ls : d.Fe, cols = down ? d.Fe : d.Ls;
                const std::string base = m + "experts." + std::to_string(e) + "." + w + ".";
                add(base + "weight_packed", "U8", {rows, cols / 2});
                add(base + "weight_scale", "U8", {rows, cols / 32});
            }
        }
        add(m + "routed_expert_down_proj.weight", "BF16", {d.Ls, d.E});
        add(m + "routed_expert_norm.weight", "BF16", {d.Ls});
        add(m + "routed_expert_up_proj.weight", "BF16", {d.E, d.Ls});
        const int64_t Fs = d.Fe * d.n_shared;
        add(m + "shared_experts.gate_proj.weight", "BF16", {Fs, d.E});
        add(m + "shared_experts.up_proj.weight", "BF16", {Fs, d.E});
        add(m + "shared_experts.down_proj.weight", "BF16", {d.E, Fs});
    }
    t.push_back({"vision_tower.patch_embed.proj.weight", "BF16", {32, 3, 2, 2}});
    t.push_back({"mm_projector.proj.0.weight", "BF16", {d.E, 128}});
    return t;
}

namespace {

int64_t bytes_of(const HfTensor& t) {
    int64_t n = t.dtype == "F32" ? 4 : t.dtype == "U8" || t.dtype.rfind("F8", 0) == 0 ? 1 : 2;
    for (int64_t s : t.shape) n *= s;
    return n;
}

std::string shape_json(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
}

std::string config_json(const K3Dims& d) {
    std::string mla;
    for (int64_t il : d.mla_layers) {
        if (!mla.empty()) mla += ',';
        mla += std::to_string(il + 1);
    }
    auto n = [](int64_t v) { return std::to_string(v); };
    return R"({"architectures":["KimiK3ForConditionalGeneration"],"model_type":"kimi_k3","text_config":{)"
           R"("vocab_size":)" + n(d.V) + R"(,"hidden_size":)" + n(d.E) + R"(,"intermediate_size":)" + n(d.F) +
           R"(,"num_hidden_layers":)" + n(d.n_layer) + R"(,"num_attention_heads":)" + n(d.H) +
           R"(,"num_key_value_heads":)" + n(d.H) + R"(,"max_position_embeddings":1048576,"rms_norm_eps":1e-05,)"
           R"("activation_situ_beta":4.0,"activation_situ_linear_beta":25.0,"q_lora_rank":)" + n(d.Lq) +
           R"(,"kv_lora_rank":)" + n(d.Lkv) + R"(,"qk_nope_head_dim":)" + n(d.Dn) + R"(,"qk_rope_head_dim":)" + n(d.Dr) +
           R"(,"v_head_dim":)" + n(d.Dv) + R"(,"mla_use_nope":true,"mla_use_output_gate":true,"linear_attn_config":{)"
           R"("full_attn_layers":[)" + mla + R"(],"num_heads":)" + n(d.H) + R"(,"head_dim":)" + n(d.D) +
           R"(,"short_conv_kernel_size":)" + n(d.K) + R"(,"gate_lower_bound":-5.0,"use_full_rank_gate":true},)"
           R"("num_experts":)" + n(d.X) + R"(,"num_experts_per_token":)" + n(d.X_used) + R"(,"num_shared_experts":)" +
           n(d.n_shared) + R"(,"moe_intermediate_size":)" + n(d.Fe) + R"(,"first_k_dense_replace":)" + n(d.n_dense) +
           R"(,"moe_layer_freq":1,"routed_scaling_factor":1.0,"moe_renormalize":true,"moe_router_activation_func":"sigmoid",)"
           R"("topk_group":1,"num_expert_group":1,"attn_res_block_size":)" + n(d.res_block) +
           R"(,"bos_token_id":163584,"eos_token_id":163586,"pad_token_id":163839,"routed_expert_hidden_size":)" + n(d.Ls) +
           R"(,"latent_moe_use_norm":true},"vision_config":{"model_type":"moonvit"}})";
}

}  // namespace

void write_synthetic_checkpoint(const std::string& dir, const K3Dims& dims, const std::vector<HfTensor>& tensors, int n_shards) {
    write_text(dir + "/config.json", config_json(dims));
    std::vector<const HfTensor*> sorted;
    int64_t total = 0;
    for (const HfTensor& t : tensors) {
        sorted.push_back(&t);
        total += bytes_of(t);
    }
    std::sort(sorted.begin(), sorted.end(), [](const HfTensor* a, const HfTensor* b) { return a->name < b->name; });
    // Split by size, in name order, as the release does.
    std::vector<std::vector<const HfTensor*>> shards(static_cast<size_t>(n_shards));
    int64_t running = 0;
    for (const HfTensor* t : sorted) {
        shards[size_t(std::min<int64_t>(n_shards - 1, running * n_shards / std::max<int64_t>(total, 1)))].push_back(t);
        running += bytes_of(*t);
    }
    std::string index = R"({"metadata":{"total_size":)" + std::to_string(total) + R"(},"weight_map":{)";
    bool first_entry = true;
    for (int s = 0; s < n_shards; ++s) {
        char file[64];
        std::snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        std::string header = R"({"__metadata__":{"format":"pt"})";
        int64_t offset = 0;
        for (const HfTensor* t : shards[size_t(s)]) {
            const int64_t end = offset + bytes_of(*t);
            header += ",\"" + t->name + R"(":{"dtype":")" + t->dtype + R"(","shape":)" + shape_json(t->shape) +
                      R"(,"data_offsets":[)" + std::to_string(offset) + "," + std::to_string(end) + "]}";
            offset = end;
            if (!first_entry) index += ',';
            index += "\"" + t->name + "\":\"" + file + "\"";
            first_entry = false;
        }
        header += "}";
        header.append((8 - header.size() % 8) % 8, ' ');
        std::string prefix(8, '\0');
        for (int i = 0; i < 8; ++i) prefix[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
        const std::string path = dir + "/" + file;
        write_text(path, prefix + header);
        if (::truncate(path.c_str(), off_t(8 + header.size() + size_t(offset))) != 0) throw std::runtime_error("truncate " + path);
    }
    write_text(dir + "/model.safetensors.index.json", index + "}}");
}

}  // namespace k3::testing
