// Fuzzes the GGUF reader: any byte string must either open (and then every tensor view must lie
// inside the file and every getter must behave) or raise k3::Error; nothing else.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gguf/gguf_file.h"
#include "util/error.h"

namespace {

// The reader maps files, so each input goes through a private temporary file.
const std::string& scratch_path() {
    static const std::string path = [] {
        std::string p = "/tmp/k3-fuzz-gguf-" + std::to_string(getpid()) + ".gguf";
        return p;
    }();
    return path;
}

void exercise(const k3::gguf::GgufFile& file) {
    for (const auto& [key, value] : file.metadata()) {
        try {
            (void)file.get_int_array(key);
        } catch (const k3::Error&) {
        }
        try {
            (void)file.get_float(key);
            (void)file.get_string_array(key);
        } catch (const k3::Error&) {
        }
    }
    volatile uint8_t sink = 0;
    for (const k3::gguf::TensorInfo& t : file.tensors()) {
        if (t.n_bytes > 0) sink = sink ^ t.data[0] ^ t.data[t.n_bytes - 1];  // must be mapped
        if (file.find_tensor(t.name) == nullptr) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(scratch_path().c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
        const auto file = k3::gguf::GgufFile::open(scratch_path());
        exercise(*file);
    } catch (const k3::Error&) {
    }
    return 0;
}
