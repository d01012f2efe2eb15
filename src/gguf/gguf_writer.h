// Writing GGUF files, streaming: declare metadata and every tensor's name/type/shape first,
// then hand over each tensor's bytes in declaration order, one at a time (the whole model is
// never in memory). Output goes to a temporary name and is fsynced and renamed on finish(),
// so a crash never leaves a half-written file under the final name. With a split limit the
// output is NAME-00001-of-0000N.gguf, ... with the split.* keys llama.cpp writes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"

namespace k3::gguf {

struct WriterOptions {
    uint32_t alignment = 32;           // general.alignment; written as a key when not 32
    uint64_t split_max_bytes = 0;      // 0: one file; else parts of at most this many bytes
                                       // (a single tensor larger than the limit gets its own part)
    bool overwrite = true;             // false: an existing output file is an error (from the constructor
                                       // for one file, before the first byte for split parts)
};

class GgufWriter {
public:
    GgufWriter(std::string path, WriterOptions options = {});
    ~GgufWriter();  // without finish(): removes the temporary files
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;

    // Metadata, kept in insertion order; setting a key again replaces its value in place.
    void set(std::string key, Value value);
    void set_u32(std::string key, uint32_t v);
    void set_i32(std::string key, int32_t v);
    void set_f32(std::string key, float v);
    void set_bool(std::string key, bool v);
    void set_string(std::string key, std::string v);
    void set_string_array(std::string key, const std::vector<std::string>& v);
    void set_i32_array(std::string key, const std::vector<int32_t>& v);
    void set_f32_array(std::string key, const std::vector<float>& v);

    // Declares a tensor; its data must later be written with write_tensor in the same order.
    void add_tensor(std::string name, tensor::Type type, std::vector<int64_t> ne);

    // Streams one tensor's bytes (exactly its size). The first call writes the headers.
    // After the tensor, a SIGINT/SIGTERM recorded by util::stop_on_signals() throws
    // util::Interrupted (the temporary files go with the writer).
    void write_tensor(std::string_view name, const void* data, uint64_t n_bytes);

    // Pads, fsyncs and renames every part into place. Returns the final paths.
    std::vector<std::string> finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace k3::gguf
