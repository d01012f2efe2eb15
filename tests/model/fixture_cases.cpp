#include "model/fixture_cases.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace k3::testing {

namespace {

// `source`: the object holding "cases" and "logits_file".
ModelFixture load_cases(const std::string& dir, const nlohmann::json& json, const nlohmann::json& source) {
    ModelFixture f;
    f.dir = dir;
    f.model_path = fixture(dir + "/model.gguf");
    f.n_vocab = json["n_vocab"].get<int64_t>();
    for (const auto& c : source["cases"]) {
        FixtureCase fc;
        fc.name = c["name"].get<std::string>();
        fc.prompt = c["prompt"].get<std::vector<int32_t>>();
        fc.generated = c["generated"].get<std::vector<int32_t>>();
        fc.tokens = c["tokens"].get<std::vector<int32_t>>();
        fc.row_offset = c["logits_row_offset"].get<int64_t>();
        f.cases.push_back(std::move(fc));
    }
    const std::vector<uint8_t> bytes = read_bytes(fixture(dir + "/" + source["logits_file"].get<std::string>()));
    f.logits.resize(bytes.size() / sizeof(float));
    std::memcpy(f.logits.data(), bytes.data(), f.logits.size() * sizeof(float));
    return f;
}

nlohmann::json read_cases(const std::string& dir) { return nlohmann::json::parse(read_text(fixture(dir + "/cases.json"))); }

}  // namespace

ModelFixture load_model_fixture(const std::string& dir) {
    const auto json = read_cases(dir);
    // Quantised storage: compare with the f32-activation twin (README section 4).
    return load_cases(dir, json, json.contains("f32act") ? json["f32act"] : json);
}

ModelFixture load_native_model_fixture(const std::string& dir) {
    const auto json = read_cases(dir);
    return load_cases(dir, json, json);
}

float max_abs_diff(const float* a, const float* b, int64_t n) {
    float worst = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float d = std::fabs(a[i] - b[i]);
        if (!(d <= worst)) worst = d;  // NaN propagates as a failure
    }
    return worst;
}

}  // namespace k3::testing
