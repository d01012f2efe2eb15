// The SIMD row decoders of the legacy, K, IQ and ternary formats must give exactly the values
// llama.cpp decodes (<zoo>/<TYPE>.dequant.f32 for the zoo's bytes: fixtures/quants, and
// fixtures/quants-imatrix for the types only an importance matrix makes) and exactly the scalar
// decoder's values on arbitrary block bytes; their fused dot kernels must agree with the exact
// dot of those values.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/dequant.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "support/test_support.h"

namespace k3::kernels {
namespace {

constexpr int64_t kCols = 512, kRows = 64;

struct ZooType {
    const char* zoo;   // fixture directory
    const char* name;  // the type, and its tensor's name in <zoo>/zoo.gguf
};
const ZooType kTypes[] = {{"quants", "Q4_0"},          {"quants", "Q4_1"},          {"quants", "Q5_0"},
                          {"quants", "Q5_1"},          {"quants", "Q2_K"},          {"quants", "Q3_K"},
                          {"quants", "Q4_K"},          {"quants", "Q5_K"},          {"quants", "Q6_K"},
                          {"quants", "IQ4_NL"},        {"quants", "IQ4_XS"},        {"quants-imatrix", "IQ1_S"},
                          {"quants-imatrix", "IQ1_M"}, {"quants-imatrix", "IQ2_XXS"}, {"quants-imatrix", "IQ2_XS"},
                          {"quants-imatrix", "IQ2_S"}, {"quants-imatrix", "IQ3_XXS"}, {"quants-imatrix", "IQ3_S"},
                          {"quants-imatrix", "TQ1_0"}, {"quants-imatrix", "TQ2_0"}};

std::vector<float> read_f32(const std::string& path) {
    const std::vector<uint8_t> bytes = testing::read_bytes(path);
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), values.size() * 4);
    return values;
}

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

class SimdDecode : public ::testing::TestWithParam<ZooType> {
protected:
    void SetUp() override {
        traits_ = tensor::find_type(GetParam().name);
        ASSERT_NE(traits_, nullptr);
        for (Isa isa : {Isa::avx2, Isa::avx512})
            if (isa_supported(isa)) isas_.push_back(isa);
        if (isas_.empty()) GTEST_SKIP() << "no SIMD level on this CPU";
        const std::string zoo = std::string(GetParam().zoo) + "/";
        const auto file = gguf::GgufFile::open(testing::fixture(zoo + "zoo.gguf"));
        const gguf::TensorInfo* info = file->find_tensor(GetParam().name);
        ASSERT_NE(info, nullptr);
        ASSERT_EQ(info->type, traits_->type);
        ASSERT_EQ(info->n_bytes, tensor::row_bytes(*traits_, kCols) * kRows);
        weights_.assign(info->data, info->data + info->n_bytes);
        decoded_ = read_f32(testing::fixture(zoo + GetParam().name + ".dequant.f32"));
        ASSERT_EQ(decoded_.size(), size_t(kCols * kRows));
    }
    const uint8_t* zoo_row(int64_t r) const { return weights_.data() + r * tensor::row_bytes(*traits_, kCols); }

    const tensor::TypeTraits* traits_ = nullptr;
    std::vector<Isa> isas_;
    std::vector<uint8_t> weights_;  // the zoo tensor, kRows rows of kCols
    std::vector<float> decoded_;    // what llama.cpp decodes it to
};

TEST_P(SimdDecode, MatchesLlamaCppValuesOnTheZoo) {
    std::vector<float> decoded(kCols);
    for (Isa isa : isas_) {
        const tensor::DequantizeRow decode = dequantize_row_kernel(traits_->type, isa);
        ASSERT_NE(decode, traits_->dequantize_row) << "no SIMD decoder for " << isa_name(isa);
        for (int64_t r = 0; r < kRows; ++r) {
            decode(zoo_row(r), decoded.data(), kCols);
            for (int64_t c = 0; c < kCols; ++c)
                ASSERT_EQ(bits_of(decoded[c]), bits_of(decoded_[r * kCols + c]))
                    << isa_name(isa) << " row " << r << " col " << c;
        }
    }
}

// Random bytes reach every level, scale byte and sign; only NaN payload signs may differ (a NaN
// min is subtracted by the scalar code and added negated by the SIMD code).
TEST_P(SimdDecode, MatchesScalarOnRandomBlocks) {
    std::mt19937 rng(1234);
    const int64_t n = 4 * 256;
    std::vector<uint8_t> bytes(tensor::row_bytes(*traits_, n));
    std::vector<float> want(n), got(n);
    for (int trial = 0; trial < 50; ++trial) {
        for (uint8_t& b : bytes) b = uint8_t(rng());
        traits_->dequantize_row(bytes.data(), want.data(), n);
        for (Isa isa : isas_) {
            dequantize_row_kernel(traits_->type, isa)(bytes.data(), got.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                if (std::isnan(want[i]) && std::isnan(got[i])) continue;
                ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << isa_name(isa) << " trial " << trial << " element " << i;
            }
        }
    }
}

// The fused dot kernels against the exact dot (in double) of llama.cpp's decoded weights with a
// random vector: the kernels use exactly those weights, so the only error is the f32
// accumulation, within n·FLT_EPSILON·Σ|w_i·x_i| for any summation order. And they accumulate as
// the level's dot_f32 does, so they equal dot_f32 of the decoded row bit for bit.
TEST_P(SimdDecode, FusedDotIsDotF32OfDecodedWeights) {
    std::mt19937 rng(99);
    std::normal_distribution<float> normal;
    std::vector<float> x(kCols);
    for (float& v : x) v = normal(rng);
    for (Isa isa : isas_) {
        const QuantDotFn dot = quant_dot_kernel(traits_->type, isa);
        ASSERT_NE(dot, nullptr) << isa_name(isa);
        const auto dot_f32 = (isa == Isa::avx2 ? avx2_dot_kernels() : avx512_dot_kernels()).dot_f32;
        for (int64_t r = 0; r < kRows; ++r) {
            const float* w = decoded_.data() + r * kCols;
            double exact = 0, magnitude = 0;
            for (int64_t c = 0; c < kCols; ++c) {
                exact += double(w[c]) * x[c];
                magnitude += std::fabs(double(w[c]) * x[c]);
            }
            const float got = dot(zoo_row(r), x.data(), kCols);
            EXPECT_NEAR(got, exact, double(kCols) * FLT_EPSILON * magnitude) << isa_name(isa) << " row " << r;
            EXPECT_EQ(bits_of(got), bits_of(dot_f32(w, x.data(), kCols))) << isa_name(isa) << " row " << r;
        }
    }
}

// Through the seam: matmul (one token: the best dot kernel; four: SIMD-decoded tiles and the
// micro-kernel of matmul_tile.h) against matmul_reference (scalar decode-then-sum; both within the bound above of the exact
// value, so within twice it of each other).
TEST_P(SimdDecode, MatmulAgreesWithScalarReference) {
    const MatrixView w{traits_, weights_.data(), kCols, kRows, tensor::row_bytes(*traits_, kCols)};
    constexpr int64_t kTokens = 4;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> x(kTokens * kCols);
    for (float& v : x) v = normal(rng);
    ThreadPool pool(1);  // the calling thread only: the products are under test, not the scheduling
    for (int64_t n_tokens : {int64_t(1), kTokens}) {
        std::vector<float> got(n_tokens * kRows), want(n_tokens * kRows);
        matmul(pool, w, x.data(), kCols, n_tokens, got.data(), kRows);
        matmul_reference(w, x.data(), kCols, n_tokens, want.data(), kRows);
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t r = 0; r < kRows; ++r) {
                const float* wr = decoded_.data() + r * kCols;
                double magnitude = 0;
                for (int64_t c = 0; c < kCols; ++c) magnitude += std::fabs(double(wr[c]) * x[t * kCols + c]);
                EXPECT_NEAR(got[t * kRows + r], want[t * kRows + r], 2 * double(kCols) * FLT_EPSILON * magnitude)
                    << n_tokens << " tokens, token " << t << " row " << r;
            }
    }
}

INSTANTIATE_TEST_SUITE_P(CommunityTypes, SimdDecode, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<ZooType>& info) { return std::string(info.param.name); });

TEST(DequantizeRowKernel, UnsupportedTypeHasNoDecoderOrDot) {
    EXPECT_EQ(dequantize_row_kernel(tensor::Type::Q8_1, Isa::scalar), nullptr);
    EXPECT_EQ(dequantize_row_kernel(tensor::Type::Q8_1), nullptr);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) EXPECT_EQ(quant_dot_kernel(tensor::Type::Q8_1, isa), nullptr);
}

}  // namespace
}  // namespace k3::kernels
