// The model fixtures' reference data (../shared/fixtures/README.md): token sequences, greedy
// continuations and llama.cpp's f32 logits (logits_f32act.bin for quantised storage).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::testing {

struct FixtureCase {
    std::string name;
    std::vector<int32_t> prompt, generated, tokens;
    int64_t row_offset = 0;
};

struct ModelFixture {
    std::string dir;         // e.g. "tiny-k3"
    std::string model_path;  // absolute
    int64_t n_vocab = 0;
    std::vector<FixtureCase> cases;
    std::vector<float> logits;  // [rows][n_vocab], the f32-math reference

    const float* reference_row(const FixtureCase& c, int64_t i) const {
        return logits.data() + (c.row_offset + i) * n_vocab;
    }
};

// Loads cases.json and the logits the README says to test against.
ModelFixture load_model_fixture(const std::string& dir);
// The native reference of a fixture that has one (tiny-k3-native, README section 10): its
// top-level cases and logits.bin, llama.cpp's result with rounded activations.
ModelFixture load_native_model_fixture(const std::string& dir);

// Largest |a - b| over n values.
float max_abs_diff(const float* a, const float* b, int64_t n);

}  // namespace k3::testing
