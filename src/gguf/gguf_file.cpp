#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <regex>
#include <unordered_map>

#include "gguf/gguf_value.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace k3::gguf {
namespace {

constexpr uint32_t kDefaultAlignment = 32;
constexpr int kMaxDims = 4;  // ggml's GGML_MAX_DIMS
// Arrays nest by recursion; real files nest at most once. A bound keeps a hostile file from
// exhausting the stack (each level costs only 12 bytes of file).
constexpr int kMaxArrayDepth = 64;

std::string at(const std::string& path, uint64_t offset) {
    return path + ": at byte " + std::to_string(offset) + ": ";
}

// Bounds-checked little-endian reads over one mapped part. Nothing is allocated for a count or
// length before it has been checked against the bytes left in the file.
class Cursor {
public:
    Cursor(const uint8_t* data, uint64_t size, const std::string& path) : data_(data), size_(size), path_(path) {}

    uint64_t offset() const { return offset_; }
    uint64_t remaining() const { return size_ - offset_; }
    const uint8_t* position() const { return data_ + offset_; }
    const std::string& path() const { return path_; }

    void need(uint64_t bytes, std::string_view what) const {
        if (bytes > remaining())
            throw Error(at(path_, offset_) + "file ends inside " + std::string(what) + " (needs " +
                        std::to_string(bytes) + " bytes, " + std::to_string(remaining()) + " left)");
    }

    template <typename T>
    T read(std::string_view what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_ + offset_, sizeof(T));
        offset_ += sizeof(T);
        return v;
    }

    std::string read_string(std::string_view what) {
        const uint64_t start = offset_;
        const uint64_t length = read<uint64_t>(what);
        if (length > remaining())
            throw Error(at(path_, start) + std::string(what) + " claims " + std::to_string(length) +
                        " bytes but only " + std::to_string(remaining()) + " remain in the file");
        std::string s(reinterpret_cast<const char*>(data_ + offset_), size_t(length));
        offset_ += length;
        return s;
    }

    void skip_string(std::string_view what) {
        const uint64_t start = offset_;
        const uint64_t length = read<uint64_t>(what);
        if (length > remaining())
            throw Error(at(path_, start) + std::string(what) + " claims " + std::to_string(length) +
                        " bytes but only " + std::to_string(remaining()) + " remain in the file");
        offset_ += length;
    }

    void skip(uint64_t bytes, std::string_view what) {
        need(bytes, what);
        offset_ += bytes;
    }

    // A count of items, each at least min_item_bytes long, must fit in what is left of the file.
    uint64_t read_count(std::string_view what, uint64_t min_item_bytes) {
        const uint64_t start = offset_;
        const uint64_t count = read<uint64_t>(what);
        if (count > remaining() / min_item_bytes)
            throw Error(at(path_, start) + std::string(what) + " is " + std::to_string(count) +
                        " but the " + std::to_string(remaining()) + " bytes left hold at most " +
                        std::to_string(remaining() / min_item_bytes));
        return count;
    }

private:
    const uint8_t* data_;
    uint64_t size_;
    uint64_t offset_ = 0;
    const std::string& path_;
};

// Smallest encoding of one value of a type: the bound used to check array counts.
uint64_t min_value_bytes(ValueType type) {
    switch (type) {
        case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
        case ValueType::UINT16: case ValueType::INT16: return 2;
        case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
        case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: case ValueType::STRING: return 8;
        case ValueType::ARRAY: return 12;  // element type + count
    }
    return 1;
}

ValueType read_value_type(Cursor& in, const std::string& key) {
    const uint64_t start = in.offset();
    const uint32_t raw = in.read<uint32_t>("a value type");
    if (raw > uint32_t(ValueType::FLOAT64))
        throw Error(at(in.path(), start) + key + ": unknown value type " + std::to_string(raw) + " (expected 0..12)");
    return ValueType(raw);
}

// Fixed encoding size of a scalar type; 0 for strings and arrays, whose size varies.
uint64_t fixed_value_bytes(ValueType type) {
    return type == ValueType::STRING || type == ValueType::ARRAY ? 0 : min_value_bytes(type);
}

Value read_value(Cursor& in, ValueType type, const std::string& key, int depth);

// Checks the encoding of `count` items of `type` and moves past them, building nothing.
void check_items(Cursor& in, ValueType type, uint64_t count, const std::string& key, int depth) {
    if (type == ValueType::STRING) {
        for (uint64_t i = 0; i < count; ++i) in.skip_string(key);
    } else if (type == ValueType::ARRAY || type == ValueType::BOOL) {
        for (uint64_t i = 0; i < count; ++i) read_value(in, type, key, depth);  // a nested array is a view
    } else {
        in.skip(count * fixed_value_bytes(type), key);  // read_count bounded count by the bytes left
    }
}

Value read_value(Cursor& in, ValueType type, const std::string& key, int depth) {
    Value v;
    v.type = type;
    switch (type) {
        case ValueType::UINT8: v.data = uint64_t(in.read<uint8_t>(key)); break;
        case ValueType::INT8: v.data = int64_t(in.read<int8_t>(key)); break;
        case ValueType::UINT16: v.data = uint64_t(in.read<uint16_t>(key)); break;
        case ValueType::INT16: v.data = int64_t(in.read<int16_t>(key)); break;
        case ValueType::UINT32: v.data = uint64_t(in.read<uint32_t>(key)); break;
        case ValueType::INT32: v.data = int64_t(in.read<int32_t>(key)); break;
        case ValueType::UINT64: v.data = in.read<uint64_t>(key); break;
        case ValueType::INT64: v.data = in.read<int64_t>(key); break;
        case ValueType::FLOAT32: v.data = double(in.read<float>(key)); break;
        case ValueType::FLOAT64: v.data = in.read<double>(key); break;
        case ValueType::BOOL: {
            const uint64_t start = in.offset();
            const uint8_t b = in.read<uint8_t>(key);
            if (b > 1) throw Error(at(in.path(), start) + key + ": bool byte is " + std::to_string(b) + " (expected 0 or 1)");
            v.data = b == 1;
            break;
        }
        case ValueType::STRING: v.data = in.read_string(key); break;
        case ValueType::ARRAY: {
            if (depth >= kMaxArrayDepth)
                throw Error(at(in.path(), in.offset()) + key + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
            Array array;
            array.element_type = read_value_type(in, key);
            array.encoded_count = in.read_count(key + " array count", min_value_bytes(array.element_type));
            array.encoded = in.position();
            const uint64_t start = in.offset();
            check_items(in, array.element_type, array.encoded_count, key, depth + 1);
            array.encoded_bytes = in.offset() - start;
            v.data = std::move(array);
            break;
        }
    }
    return v;
}

uint64_t align_up(uint64_t offset, uint64_t alignment) { return offset + (alignment - offset % alignment) % alignment; }

// One file of a (possibly split) model.
struct Part {
    explicit Part(const std::string& path) : map(path) {}
    util::MappedFile map;
    uint32_t version = 0;
    std::vector<std::pair<std::string, Value>> metadata;
    std::vector<TensorInfo> tensors;
};

const Value* find_in(const std::vector<std::pair<std::string, Value>>& metadata, std::string_view key) {
    for (const auto& [k, v] : metadata)
        if (k == key) return &v;
    return nullptr;
}

void read_header(Part& part) {
    const std::string& path = part.map.path();
    Cursor in(part.map.data(), part.map.size(), path);
    const uint32_t magic = in.read<uint32_t>("the magic \"GGUF\"");
    if (std::memcmp(part.map.data(), "GGUF", 4) != 0 || magic == 0)
        throw Error(path + ": not a GGUF file (bad magic at byte 0; expected \"GGUF\")");
    part.version = in.read<uint32_t>("the version");
    if (part.version == 1)
        throw Error(path + ": GGUF version 1 (32-bit counts) is not supported; expected version 2 or 3");
    if (part.version != 2 && part.version != 3) {
        const bool byte_swapped = (part.version & 0xffff) == 0 && part.version != 0;
        throw Error(path + ": at byte 4: unknown GGUF version " + std::to_string(part.version) +
                    (byte_swapped ? " (a big-endian file?)" : "") + "; expected 2 or 3");
    }
    // Minimum bytes per tensor info: name length (8), n_dims (4), one dimension (8), type (4),
    // offset (8). Per key/value: key length (8), value type (4), a one-byte value.
    const uint64_t n_tensors_offset = in.offset();
    const uint64_t n_tensors = in.read<uint64_t>("the tensor count");
    const uint64_t n_kv = in.read_count("the metadata key count", 13);
    if (n_tensors > in.remaining() / 32)
        throw Error(at(path, n_tensors_offset) + "tensor count " + std::to_string(n_tensors) +
                    " cannot fit in the " + std::to_string(in.remaining()) + " bytes left");

    part.metadata.reserve(size_t(n_kv));
    std::unordered_map<std::string, uint64_t> key_offsets;
    for (uint64_t i = 0; i < n_kv; ++i) {
        const uint64_t key_offset = in.offset();
        std::string key = in.read_string("metadata key #" + std::to_string(i));
        if (!key_offsets.emplace(key, key_offset).second)
            throw Error(at(path, key_offset) + "duplicate metadata key '" + key + "' (first at byte " +
                        std::to_string(key_offsets[key]) + ")");
        const ValueType type = read_value_type(in, key);
        Value value = read_value(in, type, key, 0);
        part.metadata.emplace_back(std::move(key), std::move(value));
    }

    uint64_t alignment = kDefaultAlignment;
    if (const Value* a = find_in(part.metadata, "general.alignment")) {
        alignment = value_as_uint(*a, "general.alignment");
        if (alignment == 0 || (alignment & (alignment - 1)) != 0)
            throw Error(path + ": general.alignment is " + std::to_string(alignment) + "; expected a power of two");
    }

    part.tensors.reserve(size_t(n_tensors));
    std::unordered_map<std::string_view, size_t> names;
    for (uint64_t t = 0; t < n_tensors; ++t) {
        const uint64_t info_offset = in.offset();
        TensorInfo info;
        info.name = in.read_string("the name of tensor #" + std::to_string(t));
        const std::string where = at(path, info_offset) + "tensor '" + info.name + "': ";
        const uint32_t n_dims = in.read<uint32_t>(info.name + " n_dims");
        if (n_dims < 1 || n_dims > kMaxDims)
            throw Error(where + "n_dims is " + std::to_string(n_dims) + "; expected 1.." + std::to_string(kMaxDims));
        int64_t n_elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t ne = in.read<uint64_t>(info.name + " shape");
            if (ne > uint64_t(std::numeric_limits<int64_t>::max()))
                throw Error(where + "ne[" + std::to_string(d) + "] = " + std::to_string(ne) + " is out of range");
            if (__builtin_mul_overflow(n_elements, int64_t(ne), &n_elements))
                throw Error(where + "element count overflows 64 bits");
            info.ne.push_back(int64_t(ne));
        }
        info.n_elements = n_elements;
        const uint32_t type_id = in.read<uint32_t>(info.name + " type");
        const tensor::TypeTraits* traits = tensor::find_type(type_id);
        if (!traits) throw Error(where + "unknown ggml type id " + std::to_string(type_id));
        info.type = traits->type;
        if (info.ne[0] % traits->block_size != 0)
            throw Error(where + "row length ne[0] = " + std::to_string(info.ne[0]) + " is not a multiple of " +
                        std::string(traits->name) + "'s block size " + std::to_string(traits->block_size));
        const uint64_t n_blocks = uint64_t(n_elements) / traits->block_size;
        if (__builtin_mul_overflow(n_blocks, uint64_t(traits->block_bytes), &info.n_bytes))
            throw Error(where + "byte size overflows 64 bits");
        info.file_offset = in.read<uint64_t>(info.name + " data offset");  // relative until fixed up below
        if (info.file_offset % alignment != 0)
            throw Error(where + "data offset " + std::to_string(info.file_offset) + " is not a multiple of the alignment " +
                        std::to_string(alignment));
        part.tensors.push_back(std::move(info));
        if (!names.emplace(part.tensors.back().name, t).second)
            throw Error(where + "duplicate tensor name");
    }

    const uint64_t data_start = align_up(in.offset(), alignment);
    const uint64_t data_size = part.map.size() > data_start ? part.map.size() - data_start : 0;
    std::vector<TensorInfo*> by_offset;
    for (TensorInfo& info : part.tensors) {
        if (info.file_offset > data_size || info.n_bytes > data_size - info.file_offset)
            throw Error(path + ": tensor '" + info.name + "': data [" + std::to_string(info.file_offset) + ", +" +
                        std::to_string(info.n_bytes) + ") lies beyond the data section (" + std::to_string(data_size) +
                        " bytes from byte " + std::to_string(data_start) + ")");
        info.file_offset += data_start;
        info.data = part.map.data() + info.file_offset;
        by_offset.push_back(&info);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->file_offset < b->file_offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const TensorInfo& prev = *by_offset[i - 1];
        if (prev.file_offset + prev.n_bytes > by_offset[i]->file_offset)
            throw Error(path + ": tensor '" + by_offset[i]->name + "' (data at byte " + std::to_string(by_offset[i]->file_offset) +
                        ") overlaps tensor '" + prev.name + "' (bytes " + std::to_string(prev.file_offset) + ".." +
                        std::to_string(prev.file_offset + prev.n_bytes) + ")");
    }
}

uint64_t split_key(const Part& part, std::string_view key) {
    const Value* v = find_in(part.metadata, key);
    if (!v) throw Error(part.map.path() + ": missing " + std::string(key) + " in a split model part");
    return value_as_uint(*v, std::string(part.map.path()) + ": " + std::string(key));
}

std::string part_path(const std::string& prefix, uint64_t index, uint64_t count) {
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, "-%05llu-of-%05llu.gguf", static_cast<unsigned long long>(index),
                  static_cast<unsigned long long>(count));
    return prefix + suffix;
}

}  // namespace

void Array::for_each(const std::function<void(Value item)>& visit) const {
    if (!encoded) {
        for (const Value& item : items) visit(item);
        return;
    }
    // The bytes were checked when the file was opened, so decoding cannot fail.
    static const std::string kChecked = "checked array";
    Cursor in(encoded, encoded_bytes, kChecked);
    for (uint64_t i = 0; i < encoded_count; ++i) visit(read_value(in, element_type, kChecked, 1));
}

Value Array::at(uint64_t index) const {
    if (index >= size())
        throw Error("array index " + std::to_string(index) + " is past its end (" + std::to_string(size()) + " items)");
    if (!encoded) return items[size_t(index)];
    static const std::string kChecked = "checked array";
    Cursor in(encoded, encoded_bytes, kChecked);
    if (const uint64_t fixed = fixed_value_bytes(element_type)) {
        in.skip(index * fixed, kChecked);
    } else {
        check_items(in, element_type, index, kChecked, 1);
    }
    return read_value(in, element_type, kChecked, 1);
}

struct GgufFile::Impl {
    std::string path;
    std::vector<std::string> part_paths;
    std::vector<Part> parts;
    std::vector<TensorInfo> tensors;
    std::unordered_map<std::string_view, size_t> tensor_index;
    std::unordered_map<std::string_view, size_t> key_index;
};

GgufFile::GgufFile() : impl_(std::make_unique<Impl>()) {}
GgufFile::~GgufFile() = default;

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    std::unique_ptr<GgufFile> file(new GgufFile());
    Impl& impl = *file->impl_;
    impl.path = path;

    Part first(path);
    read_header(first);
    const Value* count_value = find_in(first.metadata, "split.count");
    const uint64_t split_count = count_value ? value_as_uint(*count_value, path + ": split.count") : 1;
    if (split_count > 1) {
        // NAME-0000K-of-0000N.gguf: whichever part was named, every part is opened in order.
        static const std::regex pattern(R"((.*)-(\d{5,})-of-(\d{5,})\.gguf)");
        std::smatch match;
        if (!std::regex_match(path, match, pattern) || std::stoull(match[3].str()) != split_count)
            throw Error(path + ": split.count is " + std::to_string(split_count) +
                        " but the name does not follow " + part_path("NAME", 1, split_count));
        const std::string prefix = match[1].str();
        uint64_t n_tensors_total = 0;
        for (uint64_t i = 0; i < split_count; ++i) {
            const std::string p = part_path(prefix, i + 1, split_count);
            if (!std::filesystem::exists(p))
                throw Error(path + ": split part " + std::to_string(i + 1) + " of " + std::to_string(split_count) +
                            " is missing (expected " + p + ")");
            Part part = p == path ? std::move(first) : Part(p);
            if (p != path) read_header(part);
            if (split_key(part, "split.no") != i || split_key(part, "split.count") != split_count)
                throw Error(p + ": split.no/split.count say part " + std::to_string(split_key(part, "split.no") + 1) + " of " +
                            std::to_string(split_key(part, "split.count")) + "; expected part " + std::to_string(i + 1) +
                            " of " + std::to_string(split_count));
            n_tensors_total += part.tensors.size();
            impl.part_paths.push_back(p);
            impl.parts.push_back(std::move(part));
        }
        if (const Value* total = find_in(impl.parts[0].metadata, "split.tensors.count"))
            if (value_as_uint(*total, "split.tensors.count") != n_tensors_total)
                throw Error(impl.part_paths[0] + ": split.tensors.count is " +
                            std::to_string(value_as_uint(*total, "split.tensors.count")) + " but the parts hold " +
                            std::to_string(n_tensors_total) + " tensors");
    } else {
        impl.part_paths.push_back(path);
        impl.parts.push_back(std::move(first));
    }

    for (uint32_t p = 0; p < impl.parts.size(); ++p)
        for (TensorInfo& info : impl.parts[p].tensors) {
            info.part = p;
            impl.tensors.push_back(info);
        }
    for (size_t i = 0; i < impl.tensors.size(); ++i)
        if (!impl.tensor_index.emplace(impl.tensors[i].name, i).second)
            throw Error(impl.part_paths[impl.tensors[i].part] + ": tensor '" + impl.tensors[i].name +
                        "' also appears in an earlier split part");
    const auto& metadata = impl.parts[0].metadata;
    for (size_t i = 0; i < metadata.size(); ++i) impl.key_index.emplace(metadata[i].first, i);
    return file;
}

uint32_t GgufFile::version() const { return impl_->parts[0].version; }
const std::string& GgufFile::path() const { return impl_->path; }
const std::vector<std::string>& GgufFile::part_paths() const { return impl_->part_paths; }
const std::vector<std::pair<std::string, Value>>& GgufFile::metadata() const { return impl_->parts[0].metadata; }
const std::vector<TensorInfo>& GgufFile::tensors() const { return impl_->tensors; }

const Value* GgufFile::find(std::string_view key) const {
    auto it = impl_->key_index.find(key);
    return it == impl_->key_index.end() ? nullptr : &impl_->parts[0].metadata[it->second].second;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
    auto it = impl_->tensor_index.find(name);
    return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const Value* v = find(key);
    return v ? std::optional(value_as_uint(*v, key)) : std::nullopt;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const Value* v = find(key);
    return v ? std::optional(value_as_int(*v, key)) : std::nullopt;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const Value* v = find(key);
    return v ? std::optional(value_as_float(*v, key)) : std::nullopt;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::BOOL)
        throw Error(std::string(key) + ": expected bool, found " + std::string(value_type_name(v->type)));
    return std::get<bool>(v->data);
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::STRING)
        throw Error(std::string(key) + ": expected string, found " + std::string(value_type_name(v->type)));
    return std::get<std::string>(v->data);
}

namespace {

// The items of an array value, or the value itself as a one-element list.
template <typename T, typename Convert>
std::vector<T> as_list(const Value& v, std::string_view key, Convert convert) {
    std::vector<T> out;
    if (v.type != ValueType::ARRAY) {
        out.push_back(convert(v, key));
        return out;
    }
    const Array& a = std::get<Array>(v.data);
    out.reserve(size_t(a.size()));
    a.for_each([&](Value item) { out.push_back(convert(std::move(item), key)); });
    return out;
}

}  // namespace

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    return as_list<int64_t>(*v, key, value_as_int);
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    return as_list<float>(*v, key, [](const Value& item, std::string_view k) { return float(value_as_float(item, k)); });
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    return as_list<std::string>(*v, key, [](Value item, std::string_view k) {
        if (item.type != ValueType::STRING)
            throw Error(std::string(k) + ": expected strings, found " + std::string(value_type_name(item.type)));
        return std::move(std::get<std::string>(item.data));
    });
}

}  // namespace k3::gguf
