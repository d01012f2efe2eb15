// The community quantization types against fixtures/quants (llama.cpp's own bytes and decoded
// values for one 64 × 512 matrix): decoding must match bit for bit, and quantizing source.f32
// must reproduce llama-quantize's bytes (no importance matrix). fixtures/quants-imatrix holds the
// same matrix quantised with importance weights, in every low-bit type too: decoding must match,
// and quantizing with imatrix.f32 must reproduce those bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "tensor/tensor_type.h"
#include "util/error.h"

namespace k3::tensor {
namespace {

constexpr int64_t kCols = 512, kRows = 64;

const char* const kCommunityTypes[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K",
                                       "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};

std::vector<uint32_t> read_u32_file(const std::string& path) {
    const std::vector<uint8_t> bytes = testing::read_bytes(path);
    std::vector<uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), words.size() * 4);
    return words;
}

// The zoo tensor named `name` in `zoo`, checked to be of type t with ne = [512, 64].
const gguf::TensorInfo& zoo_tensor(const gguf::GgufFile& zoo, const char* name, const TypeTraits& t) {
    const gguf::TensorInfo* info = zoo.find_tensor(name);
    EXPECT_NE(info, nullptr) << name;
    EXPECT_EQ(info->type, t.type);
    EXPECT_EQ(info->ne, (std::vector<int64_t>{kCols, kRows}));
    EXPECT_EQ(info->n_bytes, row_bytes(t, kCols) * kRows);
    return *info;
}

// Every row of the zoo tensor named after the type decodes to <dir>/<TYPE>.dequant.f32, bit for bit.
void expect_decodes_bit_exactly(const gguf::GgufFile& zoo, const std::string& dir, const char* type_name) {
    const TypeTraits* t = find_type(type_name);
    ASSERT_NE(t, nullptr);
    ASSERT_NE(t->dequantize_row, nullptr) << type_name;
    const gguf::TensorInfo& info = zoo_tensor(zoo, type_name, *t);
    const std::vector<uint32_t> expected = read_u32_file(testing::fixture(dir + "/" + type_name + ".dequant.f32"));
    ASSERT_EQ(expected.size(), size_t(kCols * kRows));

    std::vector<float> row(kCols);
    for (int64_t r = 0; r < kRows; ++r) {
        t->dequantize_row(info.data + r * row_bytes(*t, kCols), row.data(), kCols);
        for (int64_t c = 0; c < kCols; ++c) {
            uint32_t got;
            std::memcpy(&got, &row[c], 4);
            ASSERT_EQ(got, expected[r * kCols + c]) << dir << " " << type_name << " row " << r << " col " << c
                                                    << ": got " << row[c];
        }
    }
}

class QuantZoo : public ::testing::TestWithParam<const char*> {
protected:
    static void SetUpTestSuite() { zoo_ = gguf::GgufFile::open(testing::fixture("quants/zoo.gguf")).release(); }
    static void TearDownTestSuite() {
        delete zoo_;
        zoo_ = nullptr;
    }
    static gguf::GgufFile* zoo_;
};
gguf::GgufFile* QuantZoo::zoo_ = nullptr;

TEST_P(QuantZoo, DecodesBitExactly) { expect_decodes_bit_exactly(*zoo_, "quants", GetParam()); }

std::vector<float> read_f32_file(const std::string& path) {
    const std::vector<uint8_t> bytes = testing::read_bytes(path);
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), values.size() * 4);
    return values;
}

// Quantizing every row of <dir>/source.f32 (with the importance weights, if given) reproduces
// the zoo tensor's bytes.
void expect_quantizes_to_zoo_bytes(const gguf::GgufFile& zoo, const std::string& dir, const char* type_name,
                                   const std::vector<float>* importance = nullptr) {
    const TypeTraits* t = find_type(type_name);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(can_quantize(*t)) << type_name;
    const gguf::TensorInfo& info = zoo_tensor(zoo, type_name, *t);
    const std::vector<float> source = read_f32_file(testing::fixture(dir + "/source.f32"));
    ASSERT_EQ(source.size(), size_t(kCols * kRows));
    if (importance) {
        ASSERT_EQ(importance->size(), size_t(kCols));
    }

    const size_t bytes_per_row = row_bytes(*t, kCols);
    std::vector<uint8_t> row(bytes_per_row);
    for (int64_t r = 0; r < kRows; ++r) {
        quantize_row(*t, source.data() + r * kCols, row.data(), kCols, importance ? importance->data() : nullptr);
        const uint8_t* expected = info.data + r * bytes_per_row;
        for (size_t i = 0; i < bytes_per_row; ++i)
            ASSERT_EQ(int(row[i]), int(expected[i])) << type_name << " row " << r << " block " << i / t->block_bytes
                                                     << " byte " << i % t->block_bytes;
    }
}

TEST_P(QuantZoo, QuantizesToLlamaCppBytes) { expect_quantizes_to_zoo_bytes(*zoo_, "quants", GetParam()); }

std::string type_param_name(const ::testing::TestParamInfo<const char*>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(CommunityTypes, QuantZoo, ::testing::ValuesIn(kCommunityTypes), type_param_name);

// Every type of fixtures/quants-imatrix: the low-bit IQ and ternary types, and the K-quants and
// IQ4 types with the bytes an importance matrix gives them.
const char* const kImatrixZooTypes[] = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS",
                                        "IQ3_S", "TQ1_0", "TQ2_0", "IQ4_NL", "IQ4_XS", "Q2_K",
                                        "Q3_K", "Q4_K", "Q5_K", "Q6_K"};

class QuantImatrixZoo : public ::testing::TestWithParam<const char*> {
protected:
    static void SetUpTestSuite() {
        zoo_ = gguf::GgufFile::open(testing::fixture("quants-imatrix/zoo.gguf")).release();
    }
    static void TearDownTestSuite() {
        delete zoo_;
        zoo_ = nullptr;
    }
    static gguf::GgufFile* zoo_;
};
gguf::GgufFile* QuantImatrixZoo::zoo_ = nullptr;

TEST_P(QuantImatrixZoo, DecodesBitExactly) { expect_decodes_bit_exactly(*zoo_, "quants-imatrix", GetParam()); }

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantImatrixZoo, ::testing::ValuesIn(kImatrixZooTypes), type_param_name);

// Quantizing source.f32 with imatrix.f32 reproduces llama.cpp's bytes (ggml_quantize_chunk with
// these weights, as llama-quantize --imatrix calls it; the ternary types ignore the weights).
TEST_P(QuantImatrixZoo, QuantizesWithImportanceToLlamaCppBytes) {
    const std::vector<float> importance = read_f32_file(testing::fixture("quants-imatrix/imatrix.f32"));
    expect_quantizes_to_zoo_bytes(*zoo_, "quants-imatrix", GetParam(), &importance);
}

// IQ2_XXS, IQ2_XS and IQ1_S cannot be made without importance weights: a clear error, as
// llama-quantize refuses them.
TEST(QuantImatrixZooTypes, LowestBitTypesRequireImportance) {
    for (const char* name : {"IQ2_XXS", "IQ2_XS", "IQ1_S"}) {
        const TypeTraits* t = find_type(name);
        ASSERT_NE(t, nullptr);
        EXPECT_TRUE(requires_importance(*t)) << name;
        std::vector<float> zeros(kCols);
        std::vector<uint8_t> row(row_bytes(*t, kCols));
        EXPECT_THROW(quantize_row(*t, zeros.data(), row.data(), kCols, nullptr), Error) << name;
    }
}

}  // namespace
}  // namespace k3::tensor
