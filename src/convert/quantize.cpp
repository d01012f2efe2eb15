#include "convert/quantize.h"

#include <memory>
#include <optional>
#include <regex>

#include "convert/imatrix_file.h"
#include "convert/quant_mixture.h"
#include "convert/tensor_plan.h"
#include "convert/tensor_produce.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "util/byte_size.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/progress.h"

namespace k3::convert {
namespace {

struct Rule {
    std::regex pattern;
    tensor::Type type;
};

tensor::Type encodable_type(const std::string& name, const std::string& what) {
    const tensor::TypeTraits* t = tensor::find_type(name);
    if (!t) throw Error(what + ": " + name + " is not a ggml type name (e.g. q8_0, mxfp4, bf16)");
    if (!tensor::can_quantize(*t)) throw Error(what + ": k3 cannot encode " + std::string(t->name) + " yet");
    return t->type;
}

bool is_plain_float(tensor::Type t) { return t == tensor::Type::F32 || t == tensor::Type::F16 || t == tensor::Type::BF16; }

std::string type_name(tensor::Type t) { return std::string(tensor::traits(t).name); }

// The type one tensor is written as, and the one it was meant to get when its rows are not
// whole blocks of that (the fallback is F16).
struct Encoding {
    tensor::Type type;
    tensor::Type wanted;
};

// See quantize.h for the rules; `target` is TYPE, or the named mixture's choice for this tensor.
Encoding choose_encoding(const gguf::TensorInfo& t, tensor::Type target, const std::vector<Rule>& rules, bool requantize) {
    std::optional<tensor::Type> wanted;
    for (const Rule& rule : rules) {
        if (!std::regex_search(t.name, rule.pattern)) continue;
        if (!is_plain_float(t.type) && rule.type != t.type && !requantize)
            throw Error(t.name + " is already " + type_name(t.type) + "; pass --requantize to re-encode it through f32 as " + type_name(rule.type));
        wanted = rule.type;
        break;
    }
    if (!wanted) {
        if (keeps_f32(t.name, t.ne) || (!is_plain_float(t.type) && !requantize)) return {t.type, t.type};
        wanted = target;
    }
    const tensor::Type chosen = block_compatible_type(*wanted, t.ne[0]);
    if (chosen != t.type && !tensor::traits(t.type).dequantize_row)
        throw Error(t.name + ": k3 cannot decode " + type_name(t.type) + " to re-encode it");
    return {chosen, *wanted};
}

uint64_t tensor_bytes(tensor::Type type, const gguf::TensorInfo& t) {
    return tensor::row_bytes(tensor::traits(type), t.ne[0]) * uint64_t(t.rows());
}

// One line per tensor whose type changes (and why, for a fallback), then the totals.
void print_changes(std::FILE* out, const gguf::GgufFile& in, const std::vector<Encoding>& encodings) {
    uint64_t bytes_before = 0, bytes_after = 0;
    size_t changed = 0, fallbacks = 0;
    for (size_t i = 0; i < encodings.size(); ++i) {
        const gguf::TensorInfo& t = in.tensors()[i];
        const Encoding& c = encodings[i];
        bytes_before += t.n_bytes;
        bytes_after += tensor_bytes(c.type, t);
        if (c.type == t.type) continue;
        ++changed;
        std::fprintf(out, "  %-40s %-7s -> %-7s %10s -> %s", t.name.c_str(), type_name(t.type).c_str(), type_name(c.type).c_str(),
                     util::format_byte_size(t.n_bytes).c_str(), util::format_byte_size(tensor_bytes(c.type, t)).c_str());
        if (c.type != c.wanted) {
            ++fallbacks;
            std::fprintf(out, "  (fallback: %s needs rows of a multiple of %u; this one has %lld)", type_name(c.wanted).c_str(),
                         unsigned(tensor::traits(c.wanted).block_size), static_cast<long long>(t.ne[0]));
        }
        std::fputc('\n', out);
    }
    std::fprintf(out, "%zu of %zu tensors re-encoded, %zu kept their type, %zu fell back to a type their rows fit; %s -> %s\n",
                 changed, encodings.size(), encodings.size() - changed, fallbacks,
                 util::format_byte_size(bytes_before).c_str(), util::format_byte_size(bytes_after).c_str());
}

}  // namespace

uint32_t file_type_for(tensor::Type type) {
    using tensor::Type;
    switch (type) {  // llama.cpp's llama_ftype ids (the _S/plain variant for K types)
        case Type::F32: return 0;
        case Type::F16: return 1;
        case Type::Q4_0: return 2;
        case Type::Q4_1: return 3;
        case Type::Q8_0: return 7;
        case Type::Q5_0: return 8;
        case Type::Q5_1: return 9;
        case Type::Q2_K: return 10;
        case Type::Q3_K: return 11;
        case Type::Q4_K: return 14;
        case Type::Q5_K: return 16;
        case Type::Q6_K: return 18;
        case Type::IQ2_XXS: return 19;
        case Type::IQ2_XS: return 20;
        case Type::IQ3_XXS: return 23;
        case Type::IQ1_S: return 24;
        case Type::IQ4_NL: return 25;
        case Type::IQ3_S: return 26;
        case Type::IQ2_S: return 28;
        case Type::IQ4_XS: return 30;
        case Type::IQ1_M: return 31;
        case Type::BF16: return 32;
        case Type::TQ1_0: return 36;
        case Type::TQ2_0: return 37;
        case Type::MXFP4: return 38;
        default: throw Error("no general.file_type is defined for " + type_name(type));
    }
}

namespace {

// llama-quantize's per-tensor choices for a named mixture (Q4_K_M, ...), over the whole model,
// before any fallback for rows they do not divide (choose_encoding makes and reports it).
std::vector<tensor::Type> mixture_types(Mixture mixture, const gguf::GgufFile& in, bool has_imatrix) {
    MixtureModel model;
    model.has_imatrix = has_imatrix;
    const std::string arch = in.get_string("general.architecture").value_or("kimi-k3");
    model.n_layer = int(in.get_uint(arch + ".block_count").value_or(0));
    model.n_expert = int(in.get_uint(arch + ".expert_count").value_or(0));
    const std::vector<int64_t> n_head_kv = in.get_int_array(arch + ".attention.head_count_kv").value_or(std::vector<int64_t>{});
    const int64_t n_head = int64_t(in.get_uint(arch + ".attention.head_count").value_or(0));
    model.n_gqa = !n_head_kv.empty() && n_head_kv[0] > 0 ? int(n_head / n_head_kv[0]) : 0;
    std::vector<MixtureTensor> tensors;
    for (const gguf::TensorInfo& t : in.tensors()) tensors.push_back({t.name, t.ne, t.type});
    std::vector<tensor::Type> types;
    const QuantMixture plan(mixture, model, tensors);
    for (const TypeChoice& choice : plan.choices()) types.push_back(choice.wanted);
    return types;
}

// llama-quantize's tensor_requires_imatrix: the very low-bit types, except for the embeddings
// and the output matrix.
bool needs_imatrix(const std::string& name, tensor::Type type) {
    using tensor::Type;
    if (name == "token_embd.weight" || name == "output.weight") return false;
    return type == Type::IQ1_S || type == Type::IQ1_M || type == Type::IQ2_XXS || type == Type::IQ2_XS ||
           type == Type::IQ2_S || type == Type::IQ3_XXS;
}

int64_t matrices_of(const gguf::TensorInfo& t) { return t.ne.size() > 2 ? t.ne[2] : 1; }

// Checks, before anything is written, that the imatrix fits the tensors being re-encoded
// (llama-quantize's checks, plus one for an imatrix of another model: no name matches at all).
void check_imatrix(const ImportanceMatrix* imatrix, const std::string& path, const gguf::GgufFile& in,
                   const std::vector<Encoding>& encodings, std::FILE* report) {
    size_t matched = 0, missing = 0;
    for (size_t i = 0; i < encodings.size(); ++i) {
        const gguf::TensorInfo& t = in.tensors()[i];
        if (encodings[i].type == t.type) continue;
        const bool needed = needs_imatrix(t.name, encodings[i].type);
        if (!imatrix) {
            if (needed)
                throw Error("this quantization requires an importance matrix (--imatrix): " + t.name + " is to be " +
                            type_name(encodings[i].type));
            continue;
        }
        const auto it = imatrix->entries.find(t.name);
        if (it == imatrix->entries.end()) {
            if (needed)
                throw Error(path + " has no importance weights for " + t.name + ", which is to be " +
                            type_name(encodings[i].type) + " (a very low-bit type that needs them)");
            ++missing;
            if (report) std::fprintf(report, "  no importance weights for %s\n", t.name.c_str());
            continue;
        }
        const uint64_t expected = uint64_t(t.ne[0]) * uint64_t(matrices_of(t));
        if (it->second.sums.size() != expected && t.name != "token_embd.weight")
            throw Error(path + ": " + t.name + " has " + std::to_string(it->second.sums.size()) +
                        " importance weights, the tensor needs " + std::to_string(expected) + " (" +
                        std::to_string(t.ne[0]) + " columns × " + std::to_string(matrices_of(t)) +
                        " matrices): an imatrix of another model?");
        ++matched;
    }
    if (imatrix && matched == 0)
        throw Error(path + " has no entry for any tensor this quantization re-encodes (" + std::to_string(missing) +
                    " looked up): an imatrix of another model?");
}

}  // namespace

std::vector<std::string> quantize_model(const QuantizeOptions& options, std::FILE* report, std::FILE* progress) {
    const std::optional<Mixture> mixture = parse_mixture(options.type);
    const tensor::Type target = mixture ? tensor::Type::F32 : encodable_type(options.type, "TYPE");
    std::vector<Rule> rules;
    for (const auto& [pattern, type] : options.tensor_types) {
        try {
            rules.push_back({std::regex(pattern), encodable_type(type, "--tensor-type " + pattern)});
        } catch (const std::regex_error& e) {
            throw Error("--tensor-type " + pattern + ": not a regular expression: " + e.what());
        }
    }
    const std::unique_ptr<gguf::GgufFile> in = gguf::GgufFile::open(options.input_path);
    const std::vector<tensor::Type> mixed = mixture ? mixture_types(*mixture, *in, !options.imatrix_path.empty()) : std::vector<tensor::Type>{};
    std::vector<Encoding> encodings;  // per input tensor, decided before anything is written
    for (size_t i = 0; i < in->tensors().size(); ++i)
        encodings.push_back(choose_encoding(in->tensors()[i], mixture ? mixed[i] : target, rules, options.requantize));

    const std::optional<ImportanceMatrix> imatrix =
        options.imatrix_path.empty() ? std::nullopt : std::optional(read_imatrix(options.imatrix_path));
    check_imatrix(imatrix ? &*imatrix : nullptr, options.imatrix_path, *in, encodings, report);

    gguf::GgufWriter writer(options.output_path, gguf::WriterOptions{32, options.split_max_bytes, options.overwrite});
    if (report) print_changes(report, *in, encodings);
    for (const auto& [key, value] : in->metadata()) {
        // The writer writes its own split.* keys; alignment is the writer's default.
        if (key.rfind("split.", 0) == 0 || key == "general.alignment") continue;
        writer.set(key, value);
    }
    writer.set_u32("general.file_type", mixture ? mixture_file_type(*mixture) : file_type_for(target));
    if (imatrix) {  // the keys llama-quantize records
        writer.set_string("quantize.imatrix.file", options.imatrix_path);
        if (!imatrix->datasets.empty()) writer.set_string("quantize.imatrix.dataset", imatrix->datasets[0]);
        writer.set_i32("quantize.imatrix.entries_count", int32_t(imatrix->entries.size()));
        writer.set_i32("quantize.imatrix.chunks_count", int32_t(imatrix->chunk_count));
    }
    uint64_t total_bytes = 0;
    for (size_t i = 0; i < encodings.size(); ++i) {
        const gguf::TensorInfo& t = in->tensors()[i];
        writer.add_tensor(t.name, encodings[i].type, t.ne);
        total_bytes += tensor_bytes(encodings[i].type, t);
    }
    util::Progress bar(progress, total_bytes, encodings.size());
    std::vector<uint8_t> buffer;  // the tensor being encoded
    for (size_t i = 0; i < encodings.size(); ++i) {
        const gguf::TensorInfo& t = in->tensors()[i];
        const tensor::Type type = encodings[i].type;
        const uint64_t n_bytes = tensor_bytes(type, t);
        if (type == t.type) {
            writer.write_tensor(t.name, t.data, t.n_bytes);
        } else {
            buffer.resize(size_t(n_bytes));
            std::vector<float> weights;  // per expert for a 3-D tensor
            if (imatrix) {
                const auto it = imatrix->entries.find(t.name);
                if (it != imatrix->entries.end() && it->second.sums.size() == uint64_t(t.ne[0] * matrices_of(t)))
                    weights = importance_weights(it->second, imatrix->legacy);
            }
            transcode_rows(t.data, t.type, buffer.data(), type, t.ne[0], t.rows(),
                           {weights.empty() ? nullptr : weights.data(), t.rows() / matrices_of(t)}, options.n_threads);
            writer.write_tensor(t.name, buffer.data(), n_bytes);
        }
        util::release_mapped_pages(t.data, t.n_bytes);  // memory stays bounded by the tensor being encoded
        bar.advance(n_bytes, t.name);
    }
    bar.finish();
    return writer.finish();
}

}  // namespace k3::convert
