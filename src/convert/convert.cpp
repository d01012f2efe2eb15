#include "convert/convert.h"

#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "convert/hf_config.h"
#include "convert/hf_vocab.h"
#include "convert/safetensors.h"
#include "convert/tensor_plan.h"
#include "convert/tensor_produce.h"
#include "gguf/gguf_value.h"
#include "gguf/gguf_writer.h"
#include "text/bundled_template.h"
#include "util/byte_size.h"
#include "util/error.h"
#include "util/progress.h"

namespace k3::convert {
namespace {

using Metadata = std::vector<std::pair<std::string, gguf::Value>>;
namespace fs = std::filesystem;

gguf::Value string_value(std::string s) { return {gguf::ValueType::STRING, std::move(s)}; }
gguf::Value u32_value(uint64_t v) { return {gguf::ValueType::UINT32, v}; }
gguf::Value f32_value(double v) { return {gguf::ValueType::FLOAT32, double(float(v))}; }

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::optional<nlohmann::json> read_json_if_present(const fs::path& path) {
    if (!fs::exists(path)) return std::nullopt;
    try {
        return nlohmann::json::parse(read_file(path.string()));
    } catch (const nlohmann::json::exception& e) {
        throw Error(path.string() + ": not valid JSON: " + e.what());
    }
}

tensor::Type resolve_outtype(const std::string& outtype, const SafetensorsCheckpoint& checkpoint) {
    if (outtype == "auto") {
        // As llama.cpp: the 16-bit float type of the checkpoint's first float matrix.
        for (const SafeTensor& t : checkpoint.tensors())
            if (t.shape.size() >= 2 && (t.dtype == Dtype::BF16 || t.dtype == Dtype::F16 || t.dtype == Dtype::F32))
                return t.dtype == Dtype::BF16 ? tensor::Type::BF16 : tensor::Type::F16;
        return tensor::Type::F16;
    }
    for (tensor::Type type : {tensor::Type::F32, tensor::Type::F16, tensor::Type::BF16, tensor::Type::Q8_0})
        if (tensor::traits(type).name == outtype) return type;
    throw Error("--outtype " + outtype + " is not one of auto, f32, f16, bf16, q8_0");
}

// llama_ftype of the whole file: 38 (MOSTLY_MXFP4_MOE) whenever the experts are MXFP4, as
// llama.cpp writes it for every outtype.
uint32_t file_type_of(tensor::Type outtype, bool experts_mxfp4) {
    if (experts_mxfp4) return 38;
    switch (outtype) {
        case tensor::Type::F32: return 0;
        case tensor::Type::F16: return 1;
        case tensor::Type::Q8_0: return 7;
        default: return 32;  // BF16
    }
}

// The checkpoint's own template (tokenizer_config.json or chat_template.jinja), else the
// given file, else the one bundled with k3.
std::string chat_template(const std::string& dir, const std::string& fallback_path) {
    if (auto config = read_json_if_present(fs::path(dir) / "tokenizer_config.json"); config && config->contains("chat_template")) {
        const nlohmann::json& t = (*config)["chat_template"];
        if (t.is_string()) return t.get<std::string>();
        if (t.is_array())
            for (const nlohmann::json& named : t)
                if (named.value("name", "") == "default" && named.contains("template")) return named["template"].get<std::string>();
    }
    if (fs::exists(fs::path(dir) / "chat_template.jinja")) return read_file((fs::path(dir) / "chat_template.jinja").string());
    if (!fallback_path.empty()) return read_file(fallback_path);
    return std::string(text::bundled_kimi_k3_template());
}

Metadata general_metadata(const std::string& dir, uint32_t file_type) {
    Metadata m;
    m.emplace_back("general.architecture", string_value("kimi-k3"));
    m.emplace_back("general.type", string_value("model"));
    if (auto generation = read_json_if_present(fs::path(dir) / "generation_config.json")) {
        if (generation->contains("top_k") && (*generation)["top_k"].is_number_integer())
            m.emplace_back("general.sampling.top_k", u32_value((*generation)["top_k"].get<uint64_t>()));
        if (generation->contains("top_p") && (*generation)["top_p"].is_number())
            m.emplace_back("general.sampling.top_p", f32_value((*generation)["top_p"].get<double>()));
        if (generation->contains("temperature") && (*generation)["temperature"].is_number())
            m.emplace_back("general.sampling.temp", f32_value((*generation)["temperature"].get<double>()));
    }
    m.emplace_back("general.file_type", u32_value(file_type));
    m.emplace_back("general.quantization_version", u32_value(2));
    return m;
}

Metadata tokenizer_metadata(const std::string& dir, const K3Config& config, const std::string& template_path) {
    Vocabulary vocab = read_tiktoken_vocabulary(dir, config.n_vocab);
    auto array = [](gguf::ValueType type, auto&& items) {
        gguf::Array a{type, {}};
        a.items.reserve(items.size());
        for (auto& item : items) a.items.push_back({type, std::move(item)});
        return gguf::Value{gguf::ValueType::ARRAY, std::move(a)};
    };
    std::vector<int64_t> types(vocab.token_types.begin(), vocab.token_types.end());
    Metadata m;
    m.emplace_back("tokenizer.ggml.model", string_value("gpt2"));
    m.emplace_back("tokenizer.ggml.pre", string_value("kimi-k2"));
    m.emplace_back("tokenizer.ggml.tokens", array(gguf::ValueType::STRING, vocab.tokens));
    m.emplace_back("tokenizer.ggml.token_type", array(gguf::ValueType::INT32, types));
    m.emplace_back("tokenizer.ggml.merges", array(gguf::ValueType::STRING, vocab.merges));
    // Special ids come from config.json: eos is <|end_of_msg|>, not the tokenizer's [EOS] (§13.2).
    const std::pair<const char*, std::optional<int64_t>> ids[] = {
        {"bos", config.bos_id}, {"eos", config.eos_id}, {"unknown", config.unk_id}, {"padding", config.pad_id}};
    for (const auto& [name, id] : ids) {
        if (!id) continue;
        if (*id >= config.n_vocab) throw Error(std::string("config.json: ") + name + " token id " + std::to_string(*id) + " is outside the vocabulary");
        m.emplace_back(std::string("tokenizer.ggml.") + name + "_token_id", u32_value(uint64_t(*id)));
    }
    m.emplace_back("tokenizer.chat_template", string_value(chat_template(dir, template_path)));
    return m;
}

std::string shape_text(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

// "a.experts.{0..N-1}.w1.weight_{packed,scale}" for stacked experts; the source name otherwise.
std::string sources_text(const PlannedTensor& t) {
    if (t.recipe == Recipe::StackMxfp4 || t.recipe == Recipe::StackExperts) {
        const std::string& first = t.sources.front()->name;
        const size_t experts = first.find(".experts.0.");
        const size_t n = t.recipe == Recipe::StackMxfp4 ? t.sources.size() / 2 : t.sources.size();
        std::string s = first.substr(0, experts) + ".experts.{0.." + std::to_string(n - 1) + "}." + first.substr(experts + 11);
        if (t.recipe == Recipe::StackMxfp4) s = s.substr(0, s.size() - std::string("packed").size()) + "{packed,scale}";
        return s;
    }
    std::string s;
    for (const SafeTensor* source : t.sources) s += (s.empty() ? "" : " * ") + source->name;
    return s;
}

void print_plan(std::FILE* out, const Metadata& metadata, const ConversionPlan& plan) {
    std::fprintf(out, "hyper-parameters:\n");
    for (const auto& [key, value] : metadata) std::fprintf(out, "  %-44s %s\n", key.c_str(), gguf::value_to_display(value).c_str());
    uint64_t total = 0;
    std::fprintf(out, "tensors (HF -> GGUF, ggml ne, type):\n");
    for (const PlannedTensor& t : plan.tensors) {
        total += t.n_bytes();
        std::fprintf(out, "  %s -> %s %s %s\n", sources_text(t).c_str(), t.name.c_str(), shape_text(t.ne).c_str(),
                     std::string(tensor::traits(t.type).name).c_str());
    }
    for (const std::string& name : plan.skipped) std::fprintf(out, "  %s -> (skipped: vision)\n", name.c_str());
    std::fprintf(out, "%zu GGUF tensors (%s) from %lld checkpoint tensors, %lld MXFP4 packed/scale pairs, %zu skipped\n",
                 plan.tensors.size(), util::format_byte_size(total).c_str(), static_cast<long long>(plan.n_source_tensors),
                 static_cast<long long>(plan.n_mxfp4_pairs), plan.skipped.size());
}

}  // namespace

std::vector<std::string> convert_checkpoint(const ConvertOptions& options, std::FILE* report, std::FILE* progress) {
    const std::string& dir = options.checkpoint_dir;
    const K3Config config = read_k3_config((fs::path(dir) / "config.json").string());
    const std::unique_ptr<SafetensorsCheckpoint> checkpoint = SafetensorsCheckpoint::open(dir);
    const tensor::Type outtype = resolve_outtype(options.outtype, *checkpoint);
    const ConversionPlan plan = plan_conversion(config, *checkpoint, PlanOptions{outtype});

    Metadata metadata = general_metadata(dir, file_type_of(outtype, plan.experts_mxfp4));
    for (auto& kv : k3_hparam_metadata(config)) metadata.push_back(std::move(kv));
    if (options.dry_run) {
        print_plan(report, metadata, plan);
        return {};
    }
    for (auto& kv : tokenizer_metadata(dir, config, options.chat_template_path)) metadata.push_back(std::move(kv));

    gguf::GgufWriter writer(options.output_path, gguf::WriterOptions{32, options.split_max_bytes, options.overwrite});
    for (auto& [key, value] : metadata) writer.set(key, std::move(value));
    uint64_t total_bytes = 0, largest = 0;
    for (const PlannedTensor& t : plan.tensors) {
        writer.add_tensor(t.name, t.type, t.ne);
        total_bytes += t.n_bytes();
        if (!passthrough_bytes(t)) largest = std::max(largest, t.n_bytes());
    }
    std::vector<uint8_t> buffer;  // the tensor being produced; sized once for the largest
    buffer.reserve(size_t(largest));
    util::Progress bar(progress, total_bytes, plan.tensors.size());
    for (const PlannedTensor& t : plan.tensors) {
        const uint8_t* bytes = passthrough_bytes(t);
        if (!bytes) {
            buffer.resize(size_t(t.n_bytes()));
            produce_tensor(t, buffer.data());
            bytes = buffer.data();
        }
        writer.write_tensor(t.name, bytes, t.n_bytes());
        bar.advance(t.n_bytes(), t.name);
    }
    bar.finish();
    return writer.finish();
}

}  // namespace k3::convert
