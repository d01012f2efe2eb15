// Importance-matrix files in llama.cpp's formats: one written by llama-imatrix is read with the
// entries and counts the tiny-k3 model implies, k3's own files read back as written, the
// weights are sums / count, and damaged files are refused with a clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "convert/imatrix_file.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::convert {
namespace {

std::string llama_imatrix_path() { return std::string(K3_SOURCE_DIR) + "/tests/convert/data/tiny-k3.llama-imatrix.gguf"; }

TEST(ImatrixFile, ReadsLlamaImatrixOutput) {
    const ImportanceMatrix imatrix = read_imatrix(llama_imatrix_path());
    EXPECT_FALSE(imatrix.legacy);
    EXPECT_EQ(imatrix.chunk_count, 2u);
    EXPECT_EQ(imatrix.chunk_size, 32u);
    ASSERT_EQ(imatrix.datasets.size(), 1u);
    const auto model = gguf::GgufFile::open(testing::fixture("tiny-k3/model.gguf"));
    const int64_t n_tokens = 2 * 32, n_used = int64_t(model->get_uint("kimi-k3.expert_used_count").value());
    ASSERT_FALSE(imatrix.entries.empty());
    for (const auto& [name, entry] : imatrix.entries) {
        const gguf::TensorInfo* t = model->find_tensor(name);
        ASSERT_NE(t, nullptr) << name << " is not a tiny-k3 tensor";
        const int64_t n_mat = t->ne.size() > 2 ? t->ne[2] : 1;
        EXPECT_EQ(entry.sums.size(), size_t(t->ne[0] * n_mat)) << name;
        int64_t total = 0;
        for (const int64_t c : entry.counts) total += c;
        // Every token passes n_used of a layer's experts (one count each), and every other
        // matrix once (one count for all its matrices, e.g. the heads of attn_k_b).
        if (name.find("_exps.") != std::string::npos) {
            EXPECT_EQ(entry.counts.size(), size_t(n_mat)) << name;
            EXPECT_EQ(total, n_tokens * n_used) << name;
        } else {
            EXPECT_EQ(entry.counts.size(), 1u) << name;
            EXPECT_EQ(total, n_tokens) << name;
        }
        for (const float s : entry.sums) EXPECT_GE(s, 0.f) << name << ": a sum of squares";
    }
}

TEST(ImatrixFile, WritesWhatItReadsAndWeightsAreMeans) {
    ImportanceMatrix written;
    written.datasets = {"text.txt"};
    written.chunk_count = 3;
    written.chunk_size = 512;
    written.entries["blk.0.ffn_down_exps.weight"] = {{1, 2, 3, 4, 5, 6}, {2, 0, 4}};
    written.entries["blk.0.attn_q.weight"] = {{0.5f, 8}, {4}};
    testing::ScratchDir dir;
    write_imatrix(dir.file("m.gguf"), written);

    const auto file = gguf::GgufFile::open(dir.file("m.gguf"));
    EXPECT_EQ(file->get_string("general.type"), "imatrix");
    const gguf::TensorInfo* sums = file->find_tensor("blk.0.ffn_down_exps.weight.in_sum2");
    ASSERT_NE(sums, nullptr);
    EXPECT_EQ(sums->ne, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(file->find_tensor("blk.0.ffn_down_exps.weight.counts")->ne, (std::vector<int64_t>{1, 3}));

    const ImportanceMatrix read = read_imatrix(dir.file("m.gguf"));
    EXPECT_EQ(read.datasets, written.datasets);
    EXPECT_EQ(read.chunk_count, 3u);
    EXPECT_EQ(read.chunk_size, 512u);
    ASSERT_EQ(read.entries.size(), 2u);
    for (const auto& [name, entry] : written.entries) {
        EXPECT_EQ(read.entries.at(name).sums, entry.sums) << name;
        EXPECT_EQ(read.entries.at(name).counts, entry.counts) << name;
    }
    // Means per expert; an expert that saw no tokens gets 1 (llama-quantize's rule).
    EXPECT_EQ(importance_weights(read.entries.at("blk.0.ffn_down_exps.weight"), false),
              (std::vector<float>{0.5f, 1.f, 1.f, 1.f, 1.25f, 1.5f}));
    EXPECT_EQ(importance_weights(read.entries.at("blk.0.attn_q.weight"), false), (std::vector<float>{0.125f, 2.f}));
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}
void put_i32(std::vector<uint8_t>& out, int32_t v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + 4);
}
void put_f32(std::vector<uint8_t>& out, float v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + 4);
}

// The legacy .dat layout (llama-imatrix --output-format dat): values are means × ncall.
std::vector<uint8_t> legacy_file() {
    std::vector<uint8_t> bytes;
    put_i32(bytes, 1);
    const std::string name = "blk.1.ffn_up.weight";
    put_i32(bytes, int32_t(name.size()));
    bytes.insert(bytes.end(), name.begin(), name.end());
    put_i32(bytes, 4);  // ncall
    put_i32(bytes, 3);  // nval
    for (const float v : {4.f, 8.f, 2.f}) put_f32(bytes, v);
    put_i32(bytes, 4);  // chunk count
    put_i32(bytes, 4);
    bytes.insert(bytes.end(), {'t', 'e', 'x', 't'});
    return bytes;
}

TEST(ImatrixFile, ReadsLegacyFiles) {
    testing::ScratchDir dir;
    write_bytes(dir.file("m.dat"), legacy_file());
    const ImportanceMatrix imatrix = read_imatrix(dir.file("m.dat"));
    EXPECT_TRUE(imatrix.legacy);
    EXPECT_EQ(imatrix.chunk_count, 4u);
    EXPECT_EQ(imatrix.datasets, std::vector<std::string>{"text"});
    EXPECT_EQ(importance_weights(imatrix.entries.at("blk.1.ffn_up.weight"), true), (std::vector<float>{1.f, 2.f, 0.5f}));
}

TEST(ImatrixFile, RefusesTruncatedFiles) {
    testing::ScratchDir dir;
    std::vector<uint8_t> legacy = legacy_file();
    legacy.resize(40);  // inside the values (they start at byte 35)
    write_bytes(dir.file("cut.dat"), legacy);
    try {
        read_imatrix(dir.file("cut.dat"));
        FAIL() << "a truncated legacy imatrix was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("truncated imatrix: entry 1 of 1's values"), std::string::npos) << e.what();
    }
    const std::vector<uint8_t> gguf = testing::read_bytes(llama_imatrix_path());
    write_bytes(dir.file("cut.gguf"), std::vector<uint8_t>(gguf.begin(), gguf.begin() + gguf.size() / 2));
    EXPECT_THROW(read_imatrix(dir.file("cut.gguf")), Error);
    write_bytes(dir.file("empty.dat"), {});
    EXPECT_THROW(read_imatrix(dir.file("empty.dat")), Error);
}

}  // namespace
}  // namespace k3::convert
