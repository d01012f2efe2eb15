// A model stored in the ternary types (tiny-k3-q4k re-encoded by `k3 quantize --requantize`)
// loads and runs, and under exact numerics computes what its f32 twin computes (the same file
// decoded to f32 by `k3 quantize … f32`): the types plug into every product of the forward pass.
// Under native numerics (Q8_K activations, integer dots) it runs batch and token by token.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/gguf_file.h"
#include "model/fixture_cases.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace k3 {
namespace {

constexpr const char* kFixture = "tiny-k3-q4k";

std::unique_ptr<runtime::Engine> load_engine(const std::string& path, kernels::Numerics numerics) {
    runtime::EngineOptions options;
    options.n_threads = 2;
    options.numerics = numerics;
    return runtime::Engine::load(path, options);
}

void quantize(const std::string& in, const std::string& out, const std::string& type) {
    const auto result = testing::run_k3({"quantize", in, out, type, "--requantize"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
}

class LowBitModel : public ::testing::TestWithParam<const char*> {};

TEST_P(LowBitModel, ComputesWhatItsF32TwinComputes) {
    const testing::ModelFixture fixture = testing::load_model_fixture(kFixture);
    const auto cases = nlohmann::json::parse(testing::read_text(testing::fixture(std::string(kFixture) + "/cases.json")));
    const float tolerance = cases["recommended_tolerance"]["logits_max_abs_diff"].get<float>();
    testing::ScratchDir dir;
    const std::string low = dir.file("low.gguf"), twin = dir.file("twin.gguf");
    quantize(fixture.model_path, low, GetParam());
    quantize(low, twin, "f32");
    int n_low = 0;
    for (const gguf::TensorInfo& t : gguf::GgufFile::open(low)->tensors()) n_low += tensor::traits(t.type).name == GetParam();
    EXPECT_GT(n_low, 100) << "tensors stored as " << GetParam();

    const auto engine = load_engine(low, kernels::Numerics::exact);
    const auto reference = load_engine(twin, kernels::Numerics::exact);
    for (const testing::FixtureCase& c : fixture.cases) {
        const std::vector<float> got = engine->new_session()->eval(c.tokens, /*all_logits=*/true);
        const std::vector<float> want = reference->new_session()->eval(c.tokens, /*all_logits=*/true);
        ASSERT_EQ(got.size(), want.size());
        const float diff = testing::max_abs_diff(got.data(), want.data(), int64_t(got.size()));
        EXPECT_LE(diff, tolerance) << c.name;
        RecordProperty(c.name + "_max_abs_diff_vs_f32_twin", std::to_string(diff));
    }

    const auto native = load_engine(low, kernels::Numerics::native);
    for (const testing::FixtureCase& c : fixture.cases) {
        const std::vector<float> batch = native->new_session()->eval(c.tokens, /*all_logits=*/true);
        auto session = native->new_session();
        for (int32_t token : c.tokens) {
            const std::vector<float> row = session->eval(std::span(&token, 1));
            for (float v : row) ASSERT_TRUE(std::isfinite(v)) << c.name;
        }
        for (float v : batch) ASSERT_TRUE(std::isfinite(v)) << c.name;
    }
}

INSTANTIATE_TEST_SUITE_P(Ternary, LowBitModel, ::testing::Values("tq1_0", "tq2_0"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace k3
