// `k3 quantize` on the converted tiny-a fixture: which tensors change type, that the new bytes
// decode to within the format's rounding bound of the f32 source, and the requantize rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "tensor/tensor_type.h"

namespace k3 {
namespace {

using tensor::Type;

class Quantize : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new testing::ScratchDir();
        const auto result = testing::run_k3({"convert", testing::fixture("hf/tiny-a/checkpoint"), "-o", f32_path(), "--outtype", "f32"});
        ASSERT_EQ(result.exit_code, 0) << result.err;
    }
    static void TearDownTestSuite() { delete dir_; }
    static std::string f32_path() { return dir_->file("f32.gguf"); }
    static std::string quantize(const std::vector<std::string>& args, const std::string& out) {
        std::vector<std::string> all = {"quantize"};
        all.insert(all.end(), args.begin(), args.end());
        const auto result = testing::run_k3(all);
        EXPECT_EQ(result.exit_code, 0) << result.err;
        return dir_->file(out);
    }
    static testing::ScratchDir* dir_;

public:
    static std::vector<float> decode(const gguf::TensorInfo& t) {
        std::vector<float> out(size_t(t.n_elements));
        const tensor::TypeTraits& traits = tensor::traits(t.type);
        const size_t row_bytes = tensor::row_bytes(traits, t.ne[0]);
        for (int64_t r = 0; r < t.rows(); ++r) traits.dequantize_row(t.data + r * row_bytes, out.data() + r * t.ne[0], t.ne[0]);
        return out;
    }
};
testing::ScratchDir* Quantize::dir_ = nullptr;

bool kept_f32(const std::string& name, const std::vector<int64_t>& ne) {
    const bool one_d = std::count_if(ne.begin(), ne.end(), [](int64_t d) { return d > 1; }) <= 1;
    return one_d || name.find("norm.weight") != std::string::npos || name.find("res_score") != std::string::npos ||
           name.find("ffn_gate_inp") != std::string::npos || name.find("ssm_conv1d") != std::string::npos ||
           name.find(".weight") == std::string::npos;
}

// Max |x - decoded| over one 32-block allowed by the format: Q8_0 rounds to d/2 with d = amax/127
// (plus d's own f16 rounding, 2^-11 relative, times |q| <= 127); MXFP4's E2M1 grid with scale
// 2^(floor(log2 amax) - 2) has steps up to twice that scale.
double block_bound(Type type, const float* x) {
    double amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, double(std::fabs(x[i])));
    if (amax == 0) return 0;
    if (type == Type::Q8_0) return amax / 127 * (0.5 + 127 * 0x1p-11);
    return std::ldexp(1.0, int(std::floor(std::log2(amax))) - 1);
}

void expect_close_to_source(const gguf::GgufFile& source, const gguf::GgufFile& quantized, Type type) {
    int checked = 0;
    for (const gguf::TensorInfo& q : quantized.tensors()) {
        const gguf::TensorInfo* s = source.find_tensor(q.name);
        ASSERT_NE(s, nullptr) << q.name;
        EXPECT_EQ(q.ne, s->ne) << q.name;
        if (s->type == Type::MXFP4) {
            EXPECT_EQ(q.type, Type::MXFP4) << q.name << ": quantized experts are kept";
            continue;
        }
        ASSERT_EQ(s->type, Type::F32) << q.name;
        const Type want = kept_f32(q.name, q.ne) ? Type::F32 : q.ne[0] % 32 == 0 ? type : Type::F16;
        EXPECT_EQ(q.type, want) << q.name;
        if (q.type != type) continue;
        const std::vector<float> x(reinterpret_cast<const float*>(s->data), reinterpret_cast<const float*>(s->data) + s->n_elements);
        const std::vector<float> y = Quantize::decode(q);
        for (int64_t b = 0; b < s->n_elements / 32; ++b) {
            const double bound = block_bound(type, x.data() + b * 32);
            for (int64_t i = b * 32; i < b * 32 + 32; ++i) ASSERT_LE(std::fabs(double(x[size_t(i)]) - y[size_t(i)]), bound) << q.name << "[" << i << "]";
        }
        ++checked;
    }
    EXPECT_GT(checked, 50);
}

TEST_F(Quantize, Q8_0WeightsDecodeWithinTheirRoundingBound) {
    const std::string out = quantize({f32_path(), dir_->file("q8_0.gguf"), "q8_0"}, "q8_0.gguf");
    const auto source = gguf::GgufFile::open(f32_path());
    const auto quantized = gguf::GgufFile::open(out);
    expect_close_to_source(*source, *quantized, Type::Q8_0);
    EXPECT_EQ(quantized->get_uint("general.file_type"), 7u);
    EXPECT_EQ(quantized->get_string("tokenizer.chat_template"), source->get_string("tokenizer.chat_template"));
}

TEST_F(Quantize, Mxfp4WeightsDecodeWithinTheirRoundingBound) {
    const std::string out = quantize({f32_path(), dir_->file("mxfp4.gguf"), "mxfp4"}, "mxfp4.gguf");
    const auto source = gguf::GgufFile::open(f32_path());
    const auto quantized = gguf::GgufFile::open(out);
    expect_close_to_source(*source, *quantized, Type::MXFP4);
    EXPECT_EQ(quantized->get_uint("general.file_type"), 38u);
}

TEST_F(Quantize, TensorTypeRulesOverrideTheDefaults) {
    const std::string out = quantize({f32_path(), dir_->file("rules.gguf"), "bf16", "--tensor-type", "ffn_gate_inp=q8_0",
                                      "--tensor-type", "attn_q\\.weight$=f16"},
                                     "rules.gguf");
    const auto quantized = gguf::GgufFile::open(out);
    EXPECT_EQ(quantized->find_tensor("blk.1.ffn_gate_inp.weight")->type, Type::Q8_0);
    EXPECT_EQ(quantized->find_tensor("blk.0.attn_q.weight")->type, Type::F16);
    EXPECT_EQ(quantized->find_tensor("blk.0.attn_k.weight")->type, Type::BF16);
    EXPECT_EQ(quantized->find_tensor("blk.0.attn_norm.weight")->type, Type::F32);
}

TEST_F(Quantize, QuantizedTensorsAreKeptUnlessRequantizeIsGiven) {
    const std::string q8 = quantize({f32_path(), dir_->file("q8.gguf"), "q8_0"}, "q8.gguf");
    const auto kept = gguf::GgufFile::open(quantize({q8, dir_->file("kept.gguf"), "f16"}, "kept.gguf"));
    EXPECT_EQ(kept->find_tensor("blk.0.attn_q.weight")->type, Type::Q8_0);
    EXPECT_EQ(kept->find_tensor("blk.1.ffn_up_exps.weight")->type, Type::MXFP4);
    const auto redone = gguf::GgufFile::open(quantize({q8, dir_->file("redone.gguf"), "f16", "--requantize"}, "redone.gguf"));
    EXPECT_EQ(redone->find_tensor("blk.0.attn_q.weight")->type, Type::F16);
    EXPECT_EQ(redone->find_tensor("blk.1.ffn_up_exps.weight")->type, Type::F16);

    const auto refused = testing::run_k3({"quantize", q8, dir_->file("refused.gguf"), "f16", "--tensor-type", "attn_q=bf16"});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("pass --requantize"), std::string::npos) << refused.err;
}

// -t bounds the encoding threads; how the rows are shared out must not change a byte.
TEST_F(Quantize, ThreadCountKeepsTheBytes) {
    const std::string one = quantize({f32_path(), dir_->file("t1.gguf"), "q4_k", "-t", "1"}, "t1.gguf");
    const std::string three = quantize({f32_path(), dir_->file("t3.gguf"), "q4_k", "-t", "3"}, "t3.gguf");
    EXPECT_EQ(testing::read_bytes(one), testing::read_bytes(three));
    const auto refused = testing::run_k3({"quantize", f32_path(), dir_->file("x.gguf"), "q4_k", "-t", "-1"});
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("--threads"), std::string::npos) << refused.err;
}

TEST_F(Quantize, RejectsUnknownTypes) {
    const auto result = testing::run_k3({"quantize", f32_path(), dir_->file("x.gguf"), "q9_9"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("q9_9 is not a ggml type name"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace k3
