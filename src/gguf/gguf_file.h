// Reading GGUF files: metadata, tensor infos, and zero-copy views of tensor data (mmap).
// Opening the first part of a split model ("NAME-00001-of-0000N.gguf") opens every part.
// Every count, length and offset is checked against the file before it is trusted; a bad
// file raises k3::Error naming the file, the byte offset or key/tensor, and what was expected.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tensor/tensor_type.h"

namespace k3::gguf {

enum class ValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view value_type_name(ValueType type);

struct Value;
// An array value. Built in memory (the writer's input) it holds its items. Read from a file it
// is a view over the file's mapped bytes, checked when the file was opened and decoded on
// access, so a key holding millions of strings costs no memory until someone reads it (and a
// vocabulary can be sized before it is copied). A view lives as long as its GgufFile.
struct Array {
    ValueType element_type = ValueType::UINT8;
    std::vector<Value> items;  // built in memory; nested arrays allowed

    // Read from a file: `encoded_count` items, encoded in the `encoded_bytes` bytes at `encoded`.
    const uint8_t* encoded = nullptr;
    uint64_t encoded_bytes = 0;
    uint64_t encoded_count = 0;

    uint64_t size() const;  // defined below Value, which it needs whole
    // Calls visit with each item in order (decoded from the file for a view).
    void for_each(const std::function<void(Value item)>& visit) const;
    // One item: constant time for fixed-size elements, a walk over the earlier ones for strings
    // and nested arrays of a view. Throws k3::Error past the end.
    Value at(uint64_t index) const;
};

// One metadata value. Integers keep their exact GGUF type; accessors convert with range checks.
struct Value {
    ValueType type = ValueType::UINT8;
    std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;
};

inline uint64_t Array::size() const { return encoded ? encoded_count : items.size(); }

struct TensorInfo {
    std::string name;
    tensor::Type type;
    std::vector<int64_t> ne;     // ggml order: ne[0] is contiguous; size() == n_dims (1..4)
    int64_t n_elements = 0;
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // view into the mmapped part that holds it
    uint32_t part = 0;              // index of the split part holding the data (0 if unsplit)
    uint64_t file_offset = 0;       // absolute byte offset of the data within that part

    int64_t rows() const { return n_elements / (ne.empty() ? 1 : ne[0]); }
};

class GgufFile {
public:
    // Opens a file (and, for split models, all its parts). Throws k3::Error.
    static std::unique_ptr<GgufFile> open(const std::string& path);
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    uint32_t version() const;
    const std::string& path() const;            // the path given to open()
    const std::vector<std::string>& part_paths() const;

    // Metadata, in file order (split.* keys of later parts are not merged in).
    const std::vector<std::pair<std::string, Value>>& metadata() const;
    const Value* find(std::string_view key) const;

    // Typed getters: nullopt if the key is absent; k3::Error if present with an incompatible
    // type or out of range (e.g. a negative INT32 asked for as unsigned).
    std::optional<uint64_t> get_uint(std::string_view key) const;   // any integer type
    std::optional<int64_t> get_int(std::string_view key) const;     // any integer type
    std::optional<double> get_float(std::string_view key) const;    // FLOAT32/64 or integer
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    // Arrays; a scalar of a compatible type is returned as a one-element array.
    std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
    std::optional<std::vector<float>> get_float_array(std::string_view key) const;
    std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;

    // Tensors of every part, in file order.
    const std::vector<TensorInfo>& tensors() const;
    const TensorInfo* find_tensor(std::string_view name) const;  // null if absent

private:
    GgufFile();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace k3::gguf
