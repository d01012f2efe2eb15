// Fuzzes the safetensors header parser: any byte string must either parse (and then every
// tensor view must lie inside the input and decode without reading past it) or raise k3::Error.
#include <cstdint>
#include <vector>

#include "convert/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const std::vector<k3::convert::SafeTensor> tensors = k3::convert::parse_safetensors(data, size, "fuzz");
        std::vector<float> values;
        for (const k3::convert::SafeTensor& t : tensors) {
            if (t.data < data || t.data + t.n_bytes > data + size) __builtin_trap();
            if (t.n_elements > (1 << 16) || !k3::convert::ggml_type_of(t.dtype)) continue;
            values.resize(size_t(t.n_elements));
            k3::convert::read_f32(t, values.data());  // ASan checks every byte read
        }
    } catch (const k3::Error&) {
    }
    return 0;
}
