// A model stored in the low-bit types loads and runs, and under exact numerics computes what its
// f32 twin computes (the same file decoded to f32 by `k3 quantize … f32`): the types plug into
// every product of the forward pass. Under native numerics (Q8_K activations, integer dots) it
// runs batch and token by token. The ternary models are tiny-k3-q4k re-encoded by
// `k3 quantize --requantize`; k3 cannot encode the IQ types, so their models are tiny-k3-q4k
// with every Q4_K tensor's blocks replaced by the zoo's blocks of that type (not a trained model,
// but real IQ blocks in every product).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "kernels/matmul.h"  // Numerics
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

// `model` with each Q4_K tensor stored as `type`, its blocks cycled from the zoo's rows 0-31.
void write_with_zoo_blocks(const std::string& model, const std::string& out, const std::string& type) {
    const auto source = gguf::GgufFile::open(model);
    const auto zoo = gguf::GgufFile::open(testing::fixture("quants-imatrix/zoo.gguf"));
    const tensor::TypeTraits* traits = tensor::find_type(type);
    ASSERT_NE(traits, nullptr);
    std::string zoo_name = type;
    for (char& c : zoo_name) c = char(std::toupper(static_cast<unsigned char>(c)));
    const gguf::TensorInfo* blocks = zoo->find_tensor(zoo_name);
    ASSERT_NE(blocks, nullptr);
    const uint64_t zoo_bytes = tensor::row_bytes(*traits, 512) * 32;  // rows 0-31: N(0,1)

    gguf::GgufWriter writer(out);
    for (const auto& [key, value] : source->metadata()) writer.set(key, value);
    const auto stored_type = [&](const gguf::TensorInfo& t) { return t.type == tensor::Type::Q4_K ? traits->type : t.type; };
    for (const gguf::TensorInfo& t : source->tensors()) writer.add_tensor(t.name, stored_type(t), t.ne);
    for (const gguf::TensorInfo& t : source->tensors()) {
        if (stored_type(t) == t.type) {
            writer.write_tensor(t.name, t.data, t.n_bytes);
            continue;
        }
        std::vector<uint8_t> bytes(tensor::row_bytes(*traits, t.ne[0]) * uint64_t(t.n_elements / t.ne[0]));
        for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = blocks->data[i % zoo_bytes];
        writer.write_tensor(t.name, bytes.data(), bytes.size());
    }
    writer.finish();
}

class LowBitModel : public ::testing::TestWithParam<const char*> {};

TEST_P(LowBitModel, ComputesWhatItsF32TwinComputes) {
    const testing::ModelFixture fixture = testing::load_model_fixture(kFixture);
    const auto cases = nlohmann::json::parse(testing::read_text(testing::fixture(std::string(kFixture) + "/cases.json")));
    const float tolerance = cases["recommended_tolerance"]["logits_max_abs_diff"].get<float>();
    testing::ScratchDir dir;
    const std::string low = dir.file("low.gguf"), twin = dir.file("twin.gguf");
    if (std::string_view(GetParam()).starts_with("tq")) quantize(fixture.model_path, low, GetParam());
    else write_with_zoo_blocks(fixture.model_path, low, GetParam());
    quantize(low, twin, "f32");
    int n_low = 0;
    const auto low_file = gguf::GgufFile::open(low);
    for (const gguf::TensorInfo& t : low_file->tensors()) n_low += tensor::traits(t.type).name == GetParam();
    EXPECT_GT(n_low, 100) << "tensors stored as " << GetParam();

    const auto engine = load_engine(low, kernels::Numerics::exact);
    const auto reference = load_engine(twin, kernels::Numerics::exact);
    for (const testing::FixtureCase& c : fixture.cases) {
        const std::vector<float> got = engine->new_session()->eval(c.tokens, /*all_logits=*/true);
        const std::vector<float> want = reference->new_session()->eval(c.tokens, /*all_logits=*/true);
        ASSERT_EQ(got.size(), want.size());
        for (float v : got) ASSERT_TRUE(std::isfinite(v)) << c.name;
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

INSTANTIATE_TEST_SUITE_P(Types, LowBitModel,
                         ::testing::Values("tq1_0", "tq2_0", "iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace k3
