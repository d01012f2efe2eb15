// Reading Hugging Face safetensors checkpoints: one file or shards listed by
// model.safetensors.index.json, memory-mapped, every header validated before it is trusted
// (header length inside the file, offsets inside the data section and not overlapping,
// shape x dtype == byte length). Errors name the file and the tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/tensor_type.h"
#include "util/mapped_file.h"

namespace k3::convert {

// safetensors dtypes. A K3 checkpoint uses BF16, F32 and U8 (plus F16/I8 in other exports);
// the F8 types parse (so a header is validated whole) but cannot be converted.
enum class Dtype : uint8_t { BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2 };

std::string_view dtype_name(Dtype dtype);
uint32_t dtype_bytes(Dtype dtype);
// The ggml type with the same element encoding, if k3 can read it as numbers.
std::optional<tensor::Type> ggml_type_of(Dtype dtype);

struct SafeTensor {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<int64_t> shape;  // as stored: slowest dimension first (PyTorch order)
    int64_t n_elements = 1;
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // view into the mapped file (or the parsed buffer)
    uint32_t shard = 0;             // index into SafetensorsCheckpoint::shard_paths()
};

// Parses and validates a whole safetensors image held in memory. `label` names it in errors.
// The result is sorted by name. Throws k3::Error.
std::vector<SafeTensor> parse_safetensors(const uint8_t* bytes, size_t size, const std::string& label);

// Decodes a tensor's elements to f32 (F32, F16, BF16, F64 and the integer types).
// Throws k3::Error naming the tensor for dtypes that are not numbers k3 can read (F8, BOOL).
void read_f32(const SafeTensor& tensor, float* out);

class SafetensorsCheckpoint {
public:
    // `dir` holds model.safetensors.index.json (sharded) or a single model.safetensors.
    static std::unique_ptr<SafetensorsCheckpoint> open(const std::string& dir);

    // Every tensor: shards in file-name order, names sorted within a shard.
    const std::vector<SafeTensor>& tensors() const { return tensors_; }
    const SafeTensor* find(std::string_view name) const;
    const std::vector<std::string>& shard_paths() const { return shard_paths_; }

private:
    SafetensorsCheckpoint() = default;
    void add_shard(const std::string& path);

    std::vector<std::string> shard_paths_;
    std::vector<util::MappedFile> shards_;
    std::vector<SafeTensor> tensors_;
    std::unordered_map<std::string_view, size_t> by_name_;  // views into tensors_[i].name
};

}  // namespace k3::convert
