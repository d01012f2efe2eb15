#include "convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace k3::convert {
namespace {

struct DtypeInfo {
    Dtype dtype;
    std::string_view name;
    uint32_t bytes;
};

constexpr DtypeInfo kDtypes[] = {
    {Dtype::BOOL, "BOOL", 1}, {Dtype::U8, "U8", 1},   {Dtype::I8, "I8", 1},
    {Dtype::U16, "U16", 2},   {Dtype::I16, "I16", 2}, {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2}, {Dtype::U32, "U32", 4}, {Dtype::I32, "I32", 4},
    {Dtype::F32, "F32", 4},   {Dtype::U64, "U64", 8}, {Dtype::I64, "I64", 8},
    {Dtype::F64, "F64", 8},   {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E5M2, "F8_E5M2", 1},
};

const DtypeInfo& info(Dtype dtype) {
    for (const DtypeInfo& d : kDtypes)
        if (d.dtype == dtype) return d;
    throw Error("unknown safetensors dtype id " + std::to_string(int(dtype)));
}

uint64_t read_u64_le(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// A non-negative JSON integer, or an error naming the field.
uint64_t json_count(const nlohmann::json& value, const std::string& where) {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return uint64_t(value.get<int64_t>());
    throw Error(where + " must be a non-negative integer, got " + value.dump());
}

SafeTensor parse_entry(const std::string& name, const nlohmann::json& entry, const uint8_t* data,
                       uint64_t data_size, const std::string& where) {
    if (!entry.is_object()) throw Error(where + ": entry is not a JSON object");
    auto field = [&](const char* key) -> const nlohmann::json& {
        auto it = entry.find(key);
        if (it == entry.end()) throw Error(where + ": missing \"" + key + "\"");
        return *it;
    };
    const nlohmann::json& dtype = field("dtype");
    const nlohmann::json& shape = field("shape");
    const nlohmann::json& offsets = field("data_offsets");

    SafeTensor t;
    t.name = name;
    if (!dtype.is_string()) throw Error(where + ": dtype must be a string");
    const std::string dtype_text = dtype.get<std::string>();
    auto known = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const DtypeInfo& d) { return d.name == dtype_text; });
    if (known == std::end(kDtypes)) throw Error(where + ": unknown dtype \"" + dtype_text + "\"");
    t.dtype = known->dtype;

    if (!shape.is_array()) throw Error(where + ": shape must be an array");
    uint64_t n_elements = 1;
    for (const nlohmann::json& dim : shape) {
        const uint64_t d = json_count(dim, where + ": shape entry");
        if (d > uint64_t(INT64_MAX) || __builtin_mul_overflow(n_elements, d, &n_elements) || n_elements > uint64_t(INT64_MAX))
            throw Error(where + ": shape " + shape.dump() + " has too many elements");
        t.shape.push_back(int64_t(d));
    }
    t.n_elements = int64_t(n_elements);

    if (!offsets.is_array() || offsets.size() != 2) throw Error(where + ": data_offsets must be [begin, end]");
    const uint64_t begin = json_count(offsets[0], where + ": data_offsets begin");
    const uint64_t end = json_count(offsets[1], where + ": data_offsets end");
    if (begin > end) throw Error(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] run backwards");
    if (end > data_size)
        throw Error(where + ": data_offsets end " + std::to_string(end) + " is past the data section (" +
                    std::to_string(data_size) + " bytes)");
    uint64_t expected_bytes = 0;
    const bool overflow = __builtin_mul_overflow(n_elements, uint64_t(known->bytes), &expected_bytes);
    if (overflow || expected_bytes != end - begin)
        throw Error(where + ": shape " + shape.dump() + " x " + dtype_text + " needs " +
                    (overflow ? std::string("more than 2^64") : std::to_string(expected_bytes)) +
                    " bytes but data_offsets span " + std::to_string(end - begin));
    t.n_bytes = end - begin;
    t.data = data + begin;
    return t;
}

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string_view dtype_name(Dtype dtype) { return info(dtype).name; }
uint32_t dtype_bytes(Dtype dtype) { return info(dtype).bytes; }

std::optional<tensor::Type> ggml_type_of(Dtype dtype) {
    switch (dtype) {
        case Dtype::F32: return tensor::Type::F32;
        case Dtype::F16: return tensor::Type::F16;
        case Dtype::BF16: return tensor::Type::BF16;
        case Dtype::F64: return tensor::Type::F64;
        case Dtype::I8: return tensor::Type::I8;
        case Dtype::I16: return tensor::Type::I16;
        case Dtype::I32: return tensor::Type::I32;
        case Dtype::I64: return tensor::Type::I64;
        default: return std::nullopt;
    }
}

std::vector<SafeTensor> parse_safetensors(const uint8_t* bytes, size_t size, const std::string& label) {
    if (size < 8) throw Error(label + ": " + std::to_string(size) + " bytes, too short for the 8-byte safetensors header length");
    const uint64_t header_length = read_u64_le(bytes);
    if (header_length > size - 8)
        throw Error(label + ": header length " + std::to_string(header_length) + " runs past the end of the file (" +
                    std::to_string(size) + " bytes)");
    const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(header_begin, header_begin + header_length);
    } catch (const nlohmann::json::exception& e) {
        throw Error(label + ": header is not valid JSON: " + e.what());
    }
    if (!header.is_object()) throw Error(label + ": header is not a JSON object");

    const uint8_t* data = bytes + 8 + header_length;
    const uint64_t data_size = size - 8 - header_length;
    std::vector<SafeTensor> tensors;
    tensors.reserve(header.size());
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) throw Error(label + ": __metadata__ is not a JSON object");
            continue;
        }
        tensors.push_back(parse_entry(name, entry, data, data_size, label + ": tensor " + name));
    }

    // No two tensors may share a byte (empty tensors own none).
    std::vector<const SafeTensor*> by_offset;
    for (const SafeTensor& t : tensors)
        if (t.n_bytes > 0) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](const SafeTensor* a, const SafeTensor* b) { return a->data < b->data; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const SafeTensor& previous = *by_offset[i - 1];
        if (by_offset[i]->data < previous.data + previous.n_bytes)
            throw Error(label + ": tensors " + previous.name + " and " + by_offset[i]->name + " overlap at data offset " +
                        std::to_string(by_offset[i]->data - data));
    }
    // nlohmann's object is a std::map, so items() already came in name order.
    return tensors;
}

void read_f32(const SafeTensor& tensor, float* out) {
    const std::optional<tensor::Type> type = ggml_type_of(tensor.dtype);
    if (!type)
        throw Error("tensor " + tensor.name + " has dtype " + std::string(dtype_name(tensor.dtype)) +
                    ", which k3 convert does not support" +
                    (tensor.dtype == Dtype::F8_E4M3 || tensor.dtype == Dtype::F8_E5M2 ? " (FP8 checkpoints are unsupported)" : ""));
    tensor::traits(*type).dequantize_row(tensor.data, out, tensor.n_elements);
}

std::unique_ptr<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::string& dir) {
    namespace fs = std::filesystem;
    std::unique_ptr<SafetensorsCheckpoint> checkpoint(new SafetensorsCheckpoint());
    const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
    const fs::path single_path = fs::path(dir) / "model.safetensors";

    std::map<std::string, std::string> weight_map;  // tensor name -> shard file name
    if (fs::exists(index_path)) {
        nlohmann::json index;
        try {
            index = nlohmann::json::parse(read_text_file(index_path.string()));
        } catch (const nlohmann::json::exception& e) {
            throw Error(index_path.string() + ": not valid JSON: " + e.what());
        }
        if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
            throw Error(index_path.string() + ": missing the \"weight_map\" object");
        std::set<std::string> shard_names;
        for (const auto& [name, shard] : index["weight_map"].items()) {
            if (!shard.is_string()) throw Error(index_path.string() + ": weight_map entry " + name + " is not a file name");
            const std::string file = shard.get<std::string>();
            if (file.find('/') != std::string::npos || file == ".." || file.empty())
                throw Error(index_path.string() + ": weight_map entry " + name + " names a file outside the checkpoint: " + file);
            weight_map[name] = file;
            shard_names.insert(file);
        }
        for (const std::string& shard : shard_names) checkpoint->add_shard((fs::path(dir) / shard).string());
    } else if (fs::exists(single_path)) {
        checkpoint->add_shard(single_path.string());
    } else {
        throw Error(dir + ": no model.safetensors.index.json or model.safetensors");
    }

    checkpoint->by_name_.reserve(checkpoint->tensors_.size());
    for (size_t i = 0; i < checkpoint->tensors_.size(); ++i) {
        const SafeTensor& t = checkpoint->tensors_[i];
        const std::string& shard_path = checkpoint->shard_paths_[t.shard];
        auto [it, inserted] = checkpoint->by_name_.emplace(t.name, i);
        if (!inserted)
            throw Error(shard_path + ": tensor " + t.name + " is also in " + checkpoint->shard_paths_[checkpoint->tensors_[it->second].shard]);
        if (!weight_map.empty()) {
            auto listed = weight_map.find(t.name);
            if (listed == weight_map.end()) throw Error(shard_path + ": tensor " + t.name + " is not listed in " + index_path.string());
            if (fs::path(shard_path).filename() != listed->second)
                throw Error(index_path.string() + ": lists tensor " + t.name + " in " + listed->second + " but it is in " + shard_path);
        }
    }
    for (const auto& [name, shard] : weight_map)
        if (!checkpoint->find(name)) throw Error(index_path.string() + ": lists tensor " + name + " in " + shard + ", which lacks it");
    return checkpoint;
}

void SafetensorsCheckpoint::add_shard(const std::string& path) {
    util::MappedFile& file = shards_.emplace_back(path);
    const uint32_t shard = uint32_t(shard_paths_.size());
    shard_paths_.push_back(path);
    for (SafeTensor& t : parse_safetensors(file.data(), file.size(), path)) {
        t.shard = shard;
        tensors_.push_back(std::move(t));
    }
}

const SafeTensor* SafetensorsCheckpoint::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace k3::convert
