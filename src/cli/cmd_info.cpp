// `k3 info MODEL [--tensors] [--json]`: what a GGUF holds. Works on any GGUF; for kimi-k3 files
// it also derives the layer map (k3-architecture.md §2.7) from the hyper-parameters.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_value.h"
#include "util/byte_size.h"

namespace k3::cli {
namespace {

using nlohmann::json;

struct LayerKind {
    bool mla = false;          // head_count_kv(il) != 0; KDA (recurrent) when 0
    bool moe = false;          // il >= leading_dense_block_count and the file has experts
    bool attn_res_start = false;  // il % attn_res.block_size == 0: a checkpoint is banked here
};

struct TypeTotals {
    uint64_t count = 0, bytes = 0, parameters = 0;
};

// Metadata as JSON; arrays longer than `max_items` (vocabularies, merges) are summarised.
json value_to_json(const gguf::Value& v, size_t max_items) {
    using gguf::ValueType;
    switch (v.type) {
        case ValueType::BOOL: return std::get<bool>(v.data);
        case ValueType::STRING: return std::get<std::string>(v.data);
        case ValueType::FLOAT32:
        case ValueType::FLOAT64: return std::get<double>(v.data);
        case ValueType::ARRAY: {
            const gguf::Array& a = std::get<gguf::Array>(v.data);
            if (a.size() > max_items)
                return json{{"array_of", gguf::value_type_name(a.element_type)}, {"count", a.size()}};
            json items = json::array();
            a.for_each([&](gguf::Value item) { items.push_back(value_to_json(item, max_items)); });
            return items;
        }
        default:
            if (const auto* u = std::get_if<uint64_t>(&v.data)) return *u;
            return std::get<int64_t>(v.data);
    }
}

std::vector<LayerKind> layer_map(const gguf::GgufFile& file, const std::string& arch, uint64_t n_layer) {
    std::vector<int64_t> head_count_kv = file.get_int_array(arch + ".attention.head_count_kv").value_or(std::vector<int64_t>{});
    if (head_count_kv.size() == 1) head_count_kv.assign(n_layer, head_count_kv[0]);  // scalar: same for all
    const uint64_t n_dense = file.get_uint(arch + ".leading_dense_block_count").value_or(0);
    const bool has_experts = file.get_uint(arch + ".expert_count").value_or(0) > 0;
    const uint64_t block_size = file.get_uint(arch + ".attn_res.block_size").value_or(0);
    std::vector<LayerKind> layers(n_layer);
    for (uint64_t il = 0; il < n_layer; ++il) {
        layers[il].mla = il < head_count_kv.size() && head_count_kv[il] != 0;
        layers[il].moe = has_experts && il >= n_dense;
        layers[il].attn_res_start = block_size > 0 && il % block_size == 0;
    }
    return layers;
}

std::string token_text(const gguf::GgufFile& file, std::optional<uint64_t> id) {
    const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
    if (!id || !tokens || tokens->type != gguf::ValueType::ARRAY) return "";
    const gguf::Array& items = std::get<gguf::Array>(tokens->data);
    if (*id >= items.size() || items.element_type != gguf::ValueType::STRING) return "";
    return std::get<std::string>(items.at(*id).data);
}

std::string shape_text(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

std::string index_list(const std::vector<uint64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s.empty() ? "-" : s;
}

json build_report(const gguf::GgufFile& file, bool with_tensors) {
    json report;
    report["path"] = file.path();
    report["version"] = file.version();
    report["parts"] = file.part_paths();
    const std::string arch = file.get_string("general.architecture").value_or("");
    report["architecture"] = arch;

    json metadata = json::object(), hparams = json::object();
    for (const auto& [key, value] : file.metadata()) {
        metadata[key] = value_to_json(value, 64);
        if (!arch.empty() && key.starts_with(arch + ".")) hparams[key.substr(arch.size() + 1)] = value_to_json(value, 1024);
    }
    report["metadata"] = metadata;
    report["hyperparameters"] = hparams;

    const uint64_t n_layer = arch.empty() ? 0 : file.get_uint(arch + ".block_count").value_or(0);
    report["n_layer"] = n_layer;
    if (arch == "kimi-k3") {
        json layers = json::array();
        std::vector<uint64_t> kda, mla, dense, moe, starts;
        const std::vector<LayerKind> map = layer_map(file, arch, n_layer);
        for (uint64_t il = 0; il < map.size(); ++il) {
            layers.push_back({{"layer", il}, {"mixer", map[il].mla ? "mla" : "kda"}, {"ffn", map[il].moe ? "moe" : "dense"},
                              {"attn_res_block_start", map[il].attn_res_start}});
            (map[il].mla ? mla : kda).push_back(il);
            (map[il].moe ? moe : dense).push_back(il);
            if (map[il].attn_res_start) starts.push_back(il);
        }
        report["layers"] = layers;
        report["layer_summary"] = {{"kda", kda}, {"mla", mla}, {"dense", dense}, {"moe", moe}, {"attn_res_block_starts", starts}};
    }

    if (file.find("tokenizer.ggml.model")) {
        const auto bos = file.get_uint("tokenizer.ggml.bos_token_id");
        const auto eos = file.get_uint("tokenizer.ggml.eos_token_id");
        const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
        const gguf::Value* merges = file.find("tokenizer.ggml.merges");
        auto count = [](const gguf::Value* v) -> uint64_t {
            return v && v->type == gguf::ValueType::ARRAY ? std::get<gguf::Array>(v->data).size() : 0;
        };
        json tok = {{"model", file.get_string("tokenizer.ggml.model").value_or("")},
                    {"pre", file.get_string("tokenizer.ggml.pre").value_or("")},
                    {"vocab_size", count(tokens)},
                    {"merges", count(merges)},
                    {"has_chat_template", file.find("tokenizer.chat_template") != nullptr}};
        if (bos) tok["bos"] = {{"id", *bos}, {"text", token_text(file, bos)}};
        if (eos) tok["eos"] = {{"id", *eos}, {"text", token_text(file, eos)}};
        report["tokenizer"] = tok;
    }

    std::map<std::string, TypeTotals> by_type;
    uint64_t parameters = 0, bytes = 0;
    json tensors = json::array();
    for (const gguf::TensorInfo& t : file.tensors()) {
        const std::string type(tensor::traits(t.type).name);
        TypeTotals& totals = by_type[type];
        ++totals.count;
        totals.bytes += t.n_bytes;
        totals.parameters += uint64_t(t.n_elements);
        parameters += uint64_t(t.n_elements);
        bytes += t.n_bytes;
        if (with_tensors)
            tensors.push_back({{"name", t.name}, {"type", type}, {"shape", t.ne}, {"bytes", t.n_bytes},
                               {"offset", t.file_offset}, {"part", t.part}});
    }
    json types = json::object();
    for (const auto& [name, totals] : by_type)
        types[name] = {{"count", totals.count}, {"bytes", totals.bytes}, {"parameters", totals.parameters},
                       {"bits_per_weight", totals.parameters ? 8.0 * double(totals.bytes) / double(totals.parameters) : 0.0}};
    report["tensor_count"] = file.tensors().size();
    report["parameter_count"] = parameters;
    report["tensor_bytes"] = bytes;
    report["types"] = types;
    if (with_tensors) report["tensors"] = tensors;
    return report;
}

void print_text(const gguf::GgufFile& file, const json& r) {
    std::printf("file:          %s (GGUF v%u, %zu part%s)\n", file.path().c_str(), file.version(), file.part_paths().size(),
                file.part_paths().size() == 1 ? "" : "s");
    const std::string arch = r["architecture"];
    std::printf("architecture:  %s\n", arch.empty() ? "(none)" : arch.c_str());
    if (auto name = file.get_string("general.name")) std::printf("name:          %s\n", name->c_str());

    std::printf("\nmetadata (%zu keys):\n", file.metadata().size());
    for (const auto& [key, value] : file.metadata()) {
        if (key.starts_with("tokenizer.ggml.") && value.type == gguf::ValueType::ARRAY) continue;  // summarised below
        if (key == "tokenizer.chat_template") continue;
        std::printf("  %-48s %s\n", key.c_str(), gguf::value_to_display(value).c_str());
    }

    if (r.contains("layers")) {
        const json& s = r["layer_summary"];
        std::printf("\nlayers: %llu  (KDA %zu, MLA %zu; dense %zu, MoE %zu)\n", static_cast<unsigned long long>(r["n_layer"].get<uint64_t>()),
                    s["kda"].size(), s["mla"].size(), s["dense"].size(), s["moe"].size());
        std::printf("  MLA layers:                 %s\n", index_list(s["mla"]).c_str());
        std::printf("  dense FFN layers:           %s\n", index_list(s["dense"]).c_str());
        std::printf("  attn-res blocks start at:   %s\n", index_list(s["attn_res_block_starts"]).c_str());
        std::printf("  %5s  %-5s %-6s %s\n", "layer", "mixer", "ffn", "attn-res");
        for (const json& l : r["layers"])
            std::printf("  %5llu  %-5s %-6s %s\n", static_cast<unsigned long long>(l["layer"].get<uint64_t>()),
                        l["mixer"] == "mla" ? "MLA" : "KDA", l["ffn"] == "moe" ? "MoE" : "dense",
                        l["attn_res_block_start"].get<bool>() ? "block start" : "");
    }

    if (r.contains("tokenizer")) {
        const json& t = r["tokenizer"];
        std::printf("\ntokenizer:     model %s, pre %s, vocab %llu, merges %llu, chat template: %s\n",
                    t["model"].get<std::string>().c_str(), t["pre"].get<std::string>().c_str(),
                    static_cast<unsigned long long>(t["vocab_size"].get<uint64_t>()),
                    static_cast<unsigned long long>(t["merges"].get<uint64_t>()), t["has_chat_template"].get<bool>() ? "yes" : "no");
        for (const char* which : {"bos", "eos"})
            if (t.contains(which))
                std::printf("  %s: %llu %s\n", which, static_cast<unsigned long long>(t[which]["id"].get<uint64_t>()),
                            t[which]["text"].get<std::string>().c_str());
    }

    std::printf("\ntensors: %llu, parameters: %llu, data: %s\n", static_cast<unsigned long long>(r["tensor_count"].get<uint64_t>()),
                static_cast<unsigned long long>(r["parameter_count"].get<uint64_t>()),
                util::format_byte_size(r["tensor_bytes"].get<uint64_t>()).c_str());
    for (const auto& [type, totals] : r["types"].items())
        std::printf("  %-8s %6llu tensors  %14llu params  %12s  %6.3f bits/weight\n", type.c_str(),
                    static_cast<unsigned long long>(totals["count"].get<uint64_t>()),
                    static_cast<unsigned long long>(totals["parameters"].get<uint64_t>()),
                    util::format_byte_size(totals["bytes"].get<uint64_t>()).c_str(),
                    totals["bits_per_weight"].get<double>());

    if (r.contains("tensors")) {
        std::printf("\n%-40s %-8s %-26s %14s %14s\n", "name", "type", "shape", "bytes", "offset");
        for (const gguf::TensorInfo& t : file.tensors())
            std::printf("%-40s %-8s %-26s %14llu %14llu%s\n", t.name.c_str(), std::string(tensor::traits(t.type).name).c_str(),
                        shape_text(t.ne).c_str(), static_cast<unsigned long long>(t.n_bytes),
                        static_cast<unsigned long long>(t.file_offset),
                        file.part_paths().size() > 1 ? (" part " + std::to_string(t.part + 1)).c_str() : "");
    }
}

}  // namespace

int run_info(int argc, char** argv) {
    CLI::App app{"Print a GGUF model's hyper-parameters, layer map, tokenizer, tensor types and sizes."};
    show_defaults(app);
    std::string model;
    bool with_tensors = false, as_json = false;
    app.add_option("MODEL", model, "GGUF file (the first part of a split model opens all parts)")->required();
    app.add_flag("--tensors", with_tensors, "list every tensor: name, type, shape, bytes, offset");
    app.add_flag("--json", as_json, "print one JSON object instead of text");
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;

    const auto file = gguf::GgufFile::open(model);
    const json report = build_report(*file, with_tensors);
    if (as_json) std::printf("%s\n", report.dump(1).c_str());
    else print_text(*file, report);
    return 0;
}

}  // namespace k3::cli
