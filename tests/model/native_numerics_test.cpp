// Native numerics (activations rounded as llama.cpp's CPU backend rounds them, integer dots)
// against the native reference, tiny-k3-native/logits.bin (../shared/fixtures/README.md
// section 10): every row within recommended_tolerance.native_logits_max_abs_diff, batch and
// token by token. The same comparison fails for exact (f32-activation) numerics, about 6 away,
// so the test tells the two apart. Greedy tokens are not compared: the reference's own margins
// go down to 0.004.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "kernels/matmul.h"  // Numerics
#include "model/fixture_cases.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace k3 {
namespace {

constexpr const char* kFixture = "tiny-k3-native";

float native_tolerance() {
    const auto json = nlohmann::json::parse(testing::read_text(testing::fixture(std::string(kFixture) + "/cases.json")));
    return json["recommended_tolerance"]["native_logits_max_abs_diff"].get<float>();
}

std::unique_ptr<runtime::Engine> load_engine(const testing::ModelFixture& fixture, kernels::Numerics numerics) {
    runtime::EngineOptions options;
    options.n_threads = 2;
    options.numerics = numerics;
    return runtime::Engine::load(fixture.model_path, options);
}

// Largest row difference over every case, whole sequence in one batch or token by token.
float worst_row_diff(const testing::ModelFixture& fixture, const runtime::Engine& engine, bool sequential) {
    const int64_t V = fixture.n_vocab;
    float worst = 0.0f;
    for (const testing::FixtureCase& c : fixture.cases) {
        auto session = engine.new_session();
        std::vector<float> logits;
        if (sequential) {
            for (int32_t token : c.tokens) {
                const std::vector<float> row = session->eval(std::span(&token, 1));
                logits.insert(logits.end(), row.begin(), row.end());
            }
        } else {
            logits = session->eval(c.tokens, /*all_logits=*/true);
        }
        EXPECT_EQ(int64_t(logits.size()), int64_t(c.tokens.size()) * V) << c.name;
        for (int64_t i = 0; i < int64_t(c.tokens.size()) && (i + 1) * V <= int64_t(logits.size()); ++i)
            worst = std::max(worst, testing::max_abs_diff(logits.data() + i * V, fixture.reference_row(c, i), V));
    }
    return worst;
}

TEST(NativeNumerics, MatchesTheNativeReferenceBatchAndSequential) {
    const testing::ModelFixture fixture = testing::load_native_model_fixture(kFixture);
    const auto engine = load_engine(fixture, kernels::Numerics::native);
    const float tolerance = native_tolerance();
    const float batch = worst_row_diff(fixture, *engine, false), sequential = worst_row_diff(fixture, *engine, true);
    EXPECT_LE(batch, tolerance);
    EXPECT_LE(sequential, tolerance);
    RecordProperty("native_batch_max_abs_diff", std::to_string(batch));
    RecordProperty("native_sequential_max_abs_diff", std::to_string(sequential));
}

TEST(NativeNumerics, ExactNumericsDoNotPassTheNativeTolerance) {
    const testing::ModelFixture fixture = testing::load_native_model_fixture(kFixture);
    const auto engine = load_engine(fixture, kernels::Numerics::exact);
    const float batch = worst_row_diff(fixture, *engine, false);
    EXPECT_GT(batch, native_tolerance());
    RecordProperty("exact_batch_max_abs_diff", std::to_string(batch));
}

}  // namespace
}  // namespace k3
