#include "gguf/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_set>

#include "gguf/gguf_value.h"
#include "util/error.h"
#include "util/interruption.h"

namespace k3::gguf {
namespace {

constexpr uint32_t kVersion = 3;
constexpr uint32_t kDefaultAlignment = 32;

uint64_t align_up(uint64_t offset, uint64_t alignment) { return offset + (alignment - offset % alignment) % alignment; }

// Appends little-endian encodings to a byte buffer (the whole header of a part is built in
// memory, then written at once).
struct Encoder {
    std::string bytes;

    template <typename T>
    void put(T v) {
        bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    void put_string(std::string_view s) {
        put<uint64_t>(s.size());
        bytes.append(s);
    }

    // Integers are range-checked against the declared GGUF type, so a Value can never be
    // written as something that reads back differently.
    template <typename T>
    void put_integer(const Value& v, std::string_view key) {
        if (const auto* u = std::get_if<uint64_t>(&v.data)) {
            if (*u > uint64_t(std::numeric_limits<T>::max())) throw out_of_range(v, key);
            put<T>(T(*u));
            return;
        }
        const int64_t* i = std::get_if<int64_t>(&v.data);
        if (!i) throw Error(std::string(key) + ": value of type " + std::string(value_type_name(v.type)) + " holds no integer");
        if (*i < int64_t(std::numeric_limits<T>::min()) ||
            (*i > 0 && uint64_t(*i) > uint64_t(std::numeric_limits<T>::max())))
            throw out_of_range(v, key);
        put<T>(T(*i));
    }

    static Error out_of_range(const Value& v, std::string_view key) {
        return Error(std::string(key) + ": integer does not fit in " + std::string(value_type_name(v.type)));
    }

    void put_value(const Value& v, std::string_view key) {
        auto expect = [&](bool ok) {
            if (!ok) throw Error(std::string(key) + ": value data does not match its type " + std::string(value_type_name(v.type)));
        };
        switch (v.type) {
            case ValueType::UINT8: put_integer<uint8_t>(v, key); break;
            case ValueType::INT8: put_integer<int8_t>(v, key); break;
            case ValueType::UINT16: put_integer<uint16_t>(v, key); break;
            case ValueType::INT16: put_integer<int16_t>(v, key); break;
            case ValueType::UINT32: put_integer<uint32_t>(v, key); break;
            case ValueType::INT32: put_integer<int32_t>(v, key); break;
            case ValueType::UINT64: put_integer<uint64_t>(v, key); break;
            case ValueType::INT64: put_integer<int64_t>(v, key); break;
            case ValueType::FLOAT32: expect(std::holds_alternative<double>(v.data)); put<float>(float(std::get<double>(v.data))); break;
            case ValueType::FLOAT64: expect(std::holds_alternative<double>(v.data)); put<double>(std::get<double>(v.data)); break;
            case ValueType::BOOL: expect(std::holds_alternative<bool>(v.data)); put<uint8_t>(std::get<bool>(v.data) ? 1 : 0); break;
            case ValueType::STRING: expect(std::holds_alternative<std::string>(v.data)); put_string(std::get<std::string>(v.data)); break;
            case ValueType::ARRAY: {
                expect(std::holds_alternative<Array>(v.data));
                const Array& a = std::get<Array>(v.data);
                put<uint32_t>(uint32_t(a.element_type));
                put<uint64_t>(a.size());
                if (a.encoded) {  // read from a file (quantize copies metadata): already encoded
                    bytes.append(reinterpret_cast<const char*>(a.encoded), size_t(a.encoded_bytes));
                    break;
                }
                for (const Value& item : a.items) {
                    if (item.type != a.element_type)
                        throw Error(std::string(key) + ": array of " + std::string(value_type_name(a.element_type)) +
                                    " holds a " + std::string(value_type_name(item.type)));
                    put_value(item, key);
                }
                break;
            }
            default:
                throw Error(std::string(key) + ": unknown value type " + std::to_string(uint32_t(v.type)));
        }
    }
};

struct TensorDecl {
    std::string name;
    tensor::Type type;
    std::vector<int64_t> ne;
    uint64_t n_bytes = 0;
};

// One output file: which tensors it holds and where it is being written.
struct PartPlan {
    size_t first_tensor = 0, end_tensor = 0;
    std::string final_path, temp_path;
};

Value scalar(ValueType type, uint64_t v) { return Value{type, v}; }

}  // namespace

struct GgufWriter::Impl {
    std::string path;
    WriterOptions options;
    std::vector<std::pair<std::string, Value>> metadata;
    std::vector<TensorDecl> tensors;
    std::unordered_set<std::string> tensor_names;

    std::vector<PartPlan> parts;  // planned when the first byte is written
    size_t current_part = 0;
    size_t next_tensor = 0;
    std::FILE* out = nullptr;
    uint64_t written = 0;  // bytes written to the current part
    bool finished = false;

    ~Impl() {
        if (out) std::fclose(out);
        if (!finished)
            for (const PartPlan& p : parts) std::remove(p.temp_path.c_str());
    }

    std::string header(size_t part_index) const {
        const PartPlan& part = parts[part_index];
        const bool split = parts.size() > 1;
        // The first part carries all metadata; later parts only what a reader needs to place them.
        std::vector<std::pair<std::string, Value>> kv;
        if (split) {
            kv.emplace_back("split.no", scalar(ValueType::UINT16, part_index));
            kv.emplace_back("split.count", scalar(ValueType::UINT16, parts.size()));
            kv.emplace_back("split.tensors.count", Value{ValueType::INT32, int64_t(tensors.size())});
        }
        if (part_index == 0) {
            for (const auto& entry : metadata)
                if (entry.first != "general.alignment") kv.push_back(entry);
        }
        if (options.alignment != kDefaultAlignment)
            kv.emplace_back("general.alignment", scalar(ValueType::UINT32, options.alignment));

        Encoder e;
        e.bytes.append("GGUF", 4);
        e.put<uint32_t>(kVersion);
        e.put<uint64_t>(part.end_tensor - part.first_tensor);
        e.put<uint64_t>(kv.size());
        for (const auto& [key, value] : kv) {
            e.put_string(key);
            e.put<uint32_t>(uint32_t(value.type));
            e.put_value(value, key);
        }
        uint64_t offset = 0;
        for (size_t t = part.first_tensor; t < part.end_tensor; ++t) {
            const TensorDecl& d = tensors[t];
            e.put_string(d.name);
            e.put<uint32_t>(uint32_t(d.ne.size()));
            for (int64_t n : d.ne) e.put<uint64_t>(uint64_t(n));
            e.put<uint32_t>(uint32_t(d.type));
            e.put<uint64_t>(offset);
            offset += align_up(d.n_bytes, options.alignment);
        }
        e.bytes.resize(align_up(e.bytes.size(), options.alignment), '\0');
        return e.bytes;
    }

    // Splits the tensor list into parts of at most split_max_bytes (header included); a tensor
    // larger than the limit gets a part of its own.
    void plan() {
        if (options.alignment == 0 || (options.alignment & (options.alignment - 1)) != 0)
            throw Error(path + ": alignment " + std::to_string(options.alignment) + " is not a power of two");
        parts.assign(1, PartPlan{});
        if (options.split_max_bytes > 0) {
            uint64_t part_bytes = 0;
            for (size_t t = 0; t < tensors.size(); ++t) {
                const uint64_t bytes = align_up(tensors[t].n_bytes, options.alignment);
                if (t > parts.back().first_tensor && part_bytes + bytes > options.split_max_bytes) {
                    parts.back().end_tensor = t;
                    parts.push_back(PartPlan{t, t, {}, {}});
                    part_bytes = 0;
                }
                if (part_bytes == 0) part_bytes = header_estimate(parts.size() - 1, t);
                part_bytes += bytes;
            }
        }
        parts.back().end_tensor = tensors.size();
        std::string prefix = path;
        if (prefix.size() > 5 && prefix.ends_with(".gguf")) prefix.resize(prefix.size() - 5);
        for (size_t i = 0; i < parts.size(); ++i) {
            char suffix[64];
            std::snprintf(suffix, sizeof suffix, "-%05zu-of-%05zu.gguf", i + 1, parts.size());
            parts[i].final_path = parts.size() > 1 ? prefix + suffix : path;
            parts[i].temp_path = parts[i].final_path + ".partial";
            if (!options.overwrite) refuse_existing(parts[i].final_path);
        }
    }

    static void refuse_existing(const std::string& final_path) {
        if (std::filesystem::exists(final_path))
            throw Error(final_path + " already exists; not overwriting it (--force to replace it)");
    }

    // Header bytes of a part that starts at tensor `first`, counting the tensor infos of all
    // remaining tensors (an upper bound, enough to keep parts under the limit).
    uint64_t header_estimate(size_t part_index, size_t first) const {
        uint64_t bytes = 4 + 4 + 8 + 8 + 64 * 3;  // magic, version, counts, split keys
        if (part_index == 0)
            for (const auto& [key, value] : metadata) {
                Encoder e;
                e.put_value(value, key);
                bytes += 8 + key.size() + 4 + e.bytes.size();
            }
        for (size_t t = first; t < tensors.size(); ++t) bytes += 8 + tensors[t].name.size() + 4 + 8 * tensors[t].ne.size() + 12;
        return align_up(bytes, options.alignment);
    }

    void write_bytes(const void* data, size_t n) {
        if (n && std::fwrite(data, 1, n, out) != n)
            throw Error(parts[current_part].temp_path + ": write failed: " + std::strerror(errno));
        written += n;
    }

    void open_part(size_t index) {
        current_part = index;
        const PartPlan& part = parts[index];
        out = std::fopen(part.temp_path.c_str(), "wb");
        if (!out) throw Error(part.temp_path + ": cannot create: " + std::strerror(errno));
        written = 0;
        const std::string h = header(index);
        write_bytes(h.data(), h.size());
    }

    void close_part() {
        const std::string& temp = parts[current_part].temp_path;
        const bool ok = std::fflush(out) == 0 && ::fsync(fileno(out)) == 0;
        const int err = errno;
        const bool closed = std::fclose(out) == 0;
        out = nullptr;
        if (!ok || !closed) throw Error(temp + ": flush/fsync failed: " + std::strerror(err));
    }

    void start() {
        plan();
        open_part(0);
    }
};

GgufWriter::GgufWriter(std::string path, WriterOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->path = std::move(path);
    impl_->options = options;
    // An unsplit output's name is known now: refuse before the caller does any work.
    if (!options.overwrite && options.split_max_bytes == 0) Impl::refuse_existing(impl_->path);
}

GgufWriter::~GgufWriter() = default;

void GgufWriter::set(std::string key, Value value) {
    if (!impl_->parts.empty()) throw Error(impl_->path + ": metadata '" + key + "' set after tensor data started");
    for (auto& entry : impl_->metadata)
        if (entry.first == key) {
            entry.second = std::move(value);
            return;
        }
    impl_->metadata.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::set_u32(std::string key, uint32_t v) { set(std::move(key), Value{ValueType::UINT32, uint64_t(v)}); }
void GgufWriter::set_i32(std::string key, int32_t v) { set(std::move(key), Value{ValueType::INT32, int64_t(v)}); }
void GgufWriter::set_f32(std::string key, float v) { set(std::move(key), Value{ValueType::FLOAT32, double(v)}); }
void GgufWriter::set_bool(std::string key, bool v) { set(std::move(key), Value{ValueType::BOOL, v}); }
void GgufWriter::set_string(std::string key, std::string v) { set(std::move(key), Value{ValueType::STRING, std::move(v)}); }

void GgufWriter::set_string_array(std::string key, const std::vector<std::string>& v) {
    Array a{ValueType::STRING, {}};
    a.items.reserve(v.size());
    for (const std::string& s : v) a.items.push_back(Value{ValueType::STRING, s});
    set(std::move(key), Value{ValueType::ARRAY, std::move(a)});
}

void GgufWriter::set_i32_array(std::string key, const std::vector<int32_t>& v) {
    Array a{ValueType::INT32, {}};
    a.items.reserve(v.size());
    for (int32_t x : v) a.items.push_back(Value{ValueType::INT32, int64_t(x)});
    set(std::move(key), Value{ValueType::ARRAY, std::move(a)});
}

void GgufWriter::set_f32_array(std::string key, const std::vector<float>& v) {
    Array a{ValueType::FLOAT32, {}};
    a.items.reserve(v.size());
    for (float x : v) a.items.push_back(Value{ValueType::FLOAT32, double(x)});
    set(std::move(key), Value{ValueType::ARRAY, std::move(a)});
}

void GgufWriter::add_tensor(std::string name, tensor::Type type, std::vector<int64_t> ne) {
    Impl& w = *impl_;
    const std::string where = w.path + ": tensor '" + name + "': ";
    if (!w.parts.empty()) throw Error(where + "declared after tensor data started");
    const tensor::TypeTraits* traits = tensor::find_type(uint32_t(type));
    if (!traits) throw Error(where + "unknown type id " + std::to_string(uint32_t(type)));
    if (ne.empty() || ne.size() > 4) throw Error(where + std::to_string(ne.size()) + " dimensions; expected 1..4");
    int64_t n_elements = 1;
    for (int64_t n : ne)
        if (n < 0 || __builtin_mul_overflow(n_elements, n, &n_elements)) throw Error(where + "invalid shape");
    if (ne[0] % traits->block_size != 0)
        throw Error(where + "ne[0] = " + std::to_string(ne[0]) + " is not a multiple of " + std::string(traits->name) +
                    "'s block size " + std::to_string(traits->block_size));
    if (!w.tensor_names.insert(name).second) throw Error(where + "declared twice");
    const uint64_t n_bytes = uint64_t(n_elements / traits->block_size) * traits->block_bytes;
    w.tensors.push_back(TensorDecl{std::move(name), type, std::move(ne), n_bytes});
}

void GgufWriter::write_tensor(std::string_view name, const void* data, uint64_t n_bytes) {
    Impl& w = *impl_;
    if (w.finished) throw Error(w.path + ": write_tensor after finish");
    if (w.parts.empty()) w.start();
    if (w.next_tensor >= w.tensors.size())
        throw Error(w.path + ": tensor '" + std::string(name) + "' written but all declared tensors are done");
    const TensorDecl& d = w.tensors[w.next_tensor];
    if (d.name != name)
        throw Error(w.path + ": tensor '" + std::string(name) + "' written out of order; expected '" + d.name + "'");
    if (d.n_bytes != n_bytes)
        throw Error(w.path + ": tensor '" + d.name + "' has " + std::to_string(d.n_bytes) + " bytes; got " + std::to_string(n_bytes));
    if (w.next_tensor == w.parts[w.current_part].end_tensor) {
        w.close_part();
        w.open_part(w.current_part + 1);
    }
    w.write_bytes(data, n_bytes);
    static const char zeros[256] = {};
    for (uint64_t pad = align_up(n_bytes, w.options.alignment) - n_bytes; pad > 0;) {
        const size_t n = size_t(std::min<uint64_t>(pad, sizeof zeros));
        w.write_bytes(zeros, n);
        pad -= n;
    }
    ++w.next_tensor;
    util::throw_if_interrupted();
}

std::vector<std::string> GgufWriter::finish() {
    Impl& w = *impl_;
    if (w.finished) throw Error(w.path + ": finish called twice");
    if (w.parts.empty()) w.start();
    if (w.next_tensor != w.tensors.size())
        throw Error(w.path + ": finish with " + std::to_string(w.tensors.size() - w.next_tensor) +
                    " declared tensors not written (next: '" + w.tensors[w.next_tensor].name + "')");
    // Parts with no tensors left (only possible for an empty model) still get their header.
    while (true) {
        w.close_part();
        if (w.current_part + 1 >= w.parts.size()) break;
        w.open_part(w.current_part + 1);
    }
    util::throw_if_interrupted();  // the last chance to leave nothing behind
    std::vector<std::string> paths;
    for (const PartPlan& p : w.parts) {
        if (std::rename(p.temp_path.c_str(), p.final_path.c_str()) != 0)
            throw Error(p.final_path + ": cannot rename from " + p.temp_path + ": " + std::strerror(errno));
        paths.push_back(p.final_path);
    }
    // Make the renames durable too.
    const std::filesystem::path dir = std::filesystem::absolute(w.parts[0].final_path).parent_path();
    if (int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
    w.finished = true;
    return paths;
}

}  // namespace k3::gguf
