// `k3 quantize --imatrix` on a 256-wide mock K3: each tensor is quantised with the means of its
// own imatrix entry (per expert for the 3-D expert tensors), the very low-bit types refuse to run
// without one, and an imatrix that does not fit the model is refused before anything is written.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "convert/imatrix_file.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "tensor/tensor_type.h"

namespace k3::convert {
namespace {

class QuantizeImatrix : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new testing::ScratchDir();
        const auto mock = testing::run_k3({"mock", "-o", model_path(), "--embd", "256", "--layers", "2", "--experts", "4",
                                           "--experts-used", "2", "--expert-ff", "256", "--latent", "0", "--ff", "256",
                                           "--vocab", "512", "-q"});
        ASSERT_EQ(mock.exit_code, 0) << mock.err;
        // Sums and counts with a pattern per column and matrix; expert 1 saw no tokens.
        const auto model = gguf::GgufFile::open(model_path());
        ImportanceMatrix imatrix;
        imatrix.datasets = {"synthetic"};
        imatrix.chunk_count = 1;
        imatrix.chunk_size = 64;
        for (const gguf::TensorInfo& t : model->tensors()) {
            if (t.ne.size() < 2 || t.name.find("norm") != std::string::npos) continue;
            const int64_t n_mat = t.ne.size() > 2 ? t.ne[2] : 1;
            ImatrixEntry& e = imatrix.entries[t.name];
            for (int64_t m = 0; m < n_mat; ++m) {
                e.counts.push_back(n_mat > 1 ? (m == 1 ? 0 : 2 + m) : 8);
                for (int64_t c = 0; c < t.ne[0]; ++c) e.sums.push_back(float((c * 37 + m * 11) % 97 + 1) * 0.25f);
            }
        }
        write_imatrix(imatrix_path(), imatrix);
    }
    static void TearDownTestSuite() { delete dir_; }
    static std::string model_path() { return dir_->file("mock.gguf"); }
    static std::string imatrix_path() { return dir_->file("mock.imatrix.gguf"); }
    static testing::ScratchDir* dir_;
};
testing::ScratchDir* QuantizeImatrix::dir_ = nullptr;

// The weight the test expects for column c of matrix m: the mean sum / count, 1 for no tokens.
float expected_weight(const ImatrixEntry& e, int64_t ne0, int64_t m, int64_t c) {
    const float count = float(e.counts[size_t(m)]);
    return count > 0 ? e.sums[size_t(m * ne0 + c)] / count : 1.f;
}

TEST_F(QuantizeImatrix, EachExpertIsQuantisedWithItsOwnWeights) {
    const std::string out = dir_->file("iq2xxs.gguf");
    const auto r = testing::run_k3({"quantize", model_path(), out, "iq2_xxs", "--imatrix", imatrix_path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto source = gguf::GgufFile::open(model_path());
    const auto quantized = gguf::GgufFile::open(out);
    const ImportanceMatrix imatrix = read_imatrix(imatrix_path());
    EXPECT_EQ(quantized->get_string("quantize.imatrix.file"), imatrix_path());
    const tensor::TypeTraits& iq2 = tensor::traits(tensor::Type::IQ2_XXS);
    int checked = 0;
    for (const char* name : {"blk.1.ffn_down_exps.weight", "blk.1.ffn_up_exps.weight", "blk.0.ffn_down.weight"}) {
        const gguf::TensorInfo* s = source->find_tensor(name);
        const gguf::TensorInfo* q = quantized->find_tensor(name);
        ASSERT_NE(s, nullptr) << name;
        ASSERT_NE(q, nullptr) << name;
        ASSERT_EQ(q->type, tensor::Type::IQ2_XXS) << name;
        const int64_t ne0 = s->ne[0], n_mat = s->ne.size() > 2 ? s->ne[2] : 1, rows_per_mat = s->rows() / n_mat;
        const ImatrixEntry& entry = imatrix.entries.at(name);
        std::vector<float> weights(static_cast<size_t>(ne0));
        std::vector<uint8_t> row(tensor::row_bytes(iq2, ne0));
        for (int64_t m = 0; m < n_mat; ++m) {
            for (int64_t c = 0; c < ne0; ++c) weights[size_t(c)] = expected_weight(entry, ne0, m, c);
            for (int64_t r0 = 0; r0 < rows_per_mat; ++r0) {
                const int64_t r = m * rows_per_mat + r0;
                tensor::quantize_row(iq2, reinterpret_cast<const float*>(s->data) + r * ne0, row.data(), ne0, weights.data());
                ASSERT_EQ(std::vector<uint8_t>(q->data + r * row.size(), q->data + (r + 1) * row.size()), row)
                    << name << " matrix " << m << " row " << r0;
            }
        }
        ++checked;
    }
    EXPECT_EQ(checked, 3);
}

TEST_F(QuantizeImatrix, LowBitTypesRefuseToRunWithoutOne) {
    for (const char* type : {"iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs"}) {
        const auto r = testing::run_k3({"quantize", model_path(), dir_->file("none.gguf"), type});
        EXPECT_NE(r.exit_code, 0) << type;
        EXPECT_NE(r.err.find("this quantization requires an importance matrix (--imatrix)"), std::string::npos) << r.err;
    }
    // IQ3_S and the K-quants quantise without one, as llama-quantize's do.
    EXPECT_EQ(testing::run_k3({"quantize", model_path(), dir_->file("iq3s.gguf"), "iq3_s", "-q"}).exit_code, 0);
}

TEST_F(QuantizeImatrix, RefusesAnImatrixOfAnotherModel) {
    // The llama-imatrix file of tiny-k3: the same names, 64 columns instead of 256.
    const std::string tiny = std::string(K3_SOURCE_DIR) + "/tests/convert/data/tiny-k3.llama-imatrix.gguf";
    auto r = testing::run_k3({"quantize", model_path(), dir_->file("other.gguf"), "iq2_xxs", "--imatrix", tiny});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("importance weights, the tensor needs"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("an imatrix of another model?"), std::string::npos) << r.err;

    // Names that match nothing.
    ImportanceMatrix unrelated;
    unrelated.entries["model.layers.0.mlp.down_proj.weight"] = {std::vector<float>(256, 1.f), {1}};
    write_imatrix(dir_->file("unrelated.gguf"), unrelated);
    r = testing::run_k3({"quantize", model_path(), dir_->file("other.gguf"), "q4_K", "--imatrix", dir_->file("unrelated.gguf")});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("has no entry for any tensor"), std::string::npos) << r.err;

    // A truncated file.
    const std::vector<uint8_t> bytes = testing::read_bytes(imatrix_path());
    std::ofstream(dir_->file("cut.gguf"), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), 100);
    r = testing::run_k3({"quantize", model_path(), dir_->file("other.gguf"), "q4_K", "--imatrix", dir_->file("cut.gguf")});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("cut.gguf"), std::string::npos) << r.err;
    EXPECT_FALSE(std::ifstream(dir_->file("other.gguf")).good()) << "nothing is written";
}

// tiny-k3's rows (16 to 128 wide) cannot hold the 256-value blocks of the IQ2_XXS mixture's
// types: each falls back as llama-quantize's tensor_type_fallback does (IQ2_XXS to IQ4_NL, or F16
// where its blocks of 32 do not fit either), and the report names the type each one wanted.
TEST_F(QuantizeImatrix, RowsTheTypeCannotHoldFallBackAndAreReported) {
    const std::string in = testing::fixture("tiny-k3/model.gguf"), out = dir_->file("tiny-iq2xxs.gguf");
    const std::string tiny = std::string(K3_SOURCE_DIR) + "/tests/convert/data/tiny-k3.llama-imatrix.gguf";
    const auto r = testing::run_k3({"quantize", in, out, "IQ2_XXS", "--imatrix", tiny});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto before = gguf::GgufFile::open(in), after = gguf::GgufFile::open(out);
    ASSERT_EQ(before->tensors().size(), after->tensors().size());
    size_t fell_back = 0, from_iq2_xxs = 0;
    for (size_t i = 0; i < before->tensors().size(); ++i) {
        const gguf::TensorInfo& a = before->tensors()[i];
        const gguf::TensorInfo& b = after->tensors()[i];
        if (b.type == a.type || b.type == tensor::Type::Q8_0) continue;  // kept, or a type of 32-value blocks
        const size_t start = r.err.find("  " + a.name + " ");
        ASSERT_NE(start, std::string::npos) << a.name;
        const std::string line = r.err.substr(start, r.err.find('\n', start) - start);
        ++fell_back;
        EXPECT_NE(line.find(" needs rows of a multiple of 256; this one has " + std::to_string(a.ne[0]) + ")"), std::string::npos)
            << line;
        if (line.find("(fallback: iq2_xxs ") == std::string::npos) continue;
        ++from_iq2_xxs;
        EXPECT_EQ(b.type, a.ne[0] % 32 == 0 ? tensor::Type::IQ4_NL : tensor::Type::F16) << line;
    }
    EXPECT_GT(from_iq2_xxs, 100u);
    EXPECT_NE(r.err.find(", " + std::to_string(fell_back) + " fell back to a type their rows fit"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace k3::convert
