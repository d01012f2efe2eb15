// Every GGUF under ../shared/fixtures opens, and its tensor list is what the fixtures'
// READMEs and cases.json say: counts per type, shapes, and the per-layer tensor sets of the
// spec (§2: KDA 18, MLA 13 with LoRA q / 11 without, MoE FFN 11, dense FFN 3, 4 globals).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "gguf/gguf_file.h"
#include "support/test_support.h"

namespace k3::gguf {
namespace {

struct ModelFixture {
    const char* path;
    std::set<int64_t> mla_layers;
    int64_t n_layer, n_dense, attn_res_block_size;
    bool q_lora;
    size_t conv_dims;  // 4; 3 after llama-quantize drops the trailing 1 (spec §2.3)
    std::map<std::string, size_t> type_counts;  // empty: not stated by the fixture
};

// Layer maps from the fixtures' READMEs and cases.json/config.json, type counts from
// fixtures/README.md §1 and tiny-k3-q4k/cases.json "quantize".
const ModelFixture kModels[] = {
    {"tiny-k3/model.gguf", {3, 7, 8}, 9, 1, 3, true, 4, {{"f32", 242}}},
    {"tiny-k3-mxfp4/model.gguf", {3, 7, 8}, 9, 1, 3, true, 4, {{"bf16", 114}, {"f32", 104}, {"mxfp4", 24}}},
    {"tiny-k3-q4k/model.gguf", {3, 7, 8}, 9, 1, 3, true, 3, {{"f32", 104}, {"q4_K", 117}, {"q5_0", 9}, {"q6_K", 12}}},
    {"hf/tiny-a/expected-f32.gguf", {3, 7, 8}, 9, 1, 4, true, 4, {}},
    {"hf/tiny-a/expected-bf16.gguf", {3, 7, 8}, 9, 1, 4, true, 4, {}},
    {"hf/tiny-b/expected-f32.gguf", {3, 7, 8}, 9, 1, 3, false, 4, {}},
};

void PrintTo(const ModelFixture& m, std::ostream* os) { *os << m.path; }

size_t expected_tensor_count(const ModelFixture& m) {
    size_t n = 4;  // token_embd, output_norm, output, output_res_score
    for (int64_t il = 0; il < m.n_layer; ++il) {
        n += m.mla_layers.count(il) ? (m.q_lora ? 13 : 11) : 18;
        n += il < m.n_dense ? 3 : 11;
    }
    return n;
}

class FixtureModel : public ::testing::TestWithParam<ModelFixture> {};

TEST_P(FixtureModel, OpensWithTheDocumentedLayerMapAndTensors) {
    const ModelFixture& m = GetParam();
    const auto file = GgufFile::open(testing::fixture(m.path));
    EXPECT_EQ(file->version(), 3u);
    EXPECT_EQ(file->get_string("general.architecture"), "kimi-k3");
    EXPECT_EQ(file->get_uint("kimi-k3.block_count"), uint64_t(m.n_layer));
    EXPECT_EQ(file->get_uint("kimi-k3.leading_dense_block_count"), uint64_t(m.n_dense));
    EXPECT_EQ(file->get_uint("kimi-k3.attn_res.block_size"), uint64_t(m.attn_res_block_size));
    const std::vector<int64_t> head_count_kv = file->get_int_array("kimi-k3.attention.head_count_kv").value();
    ASSERT_EQ(head_count_kv.size(), size_t(m.n_layer));
    for (int64_t il = 0; il < m.n_layer; ++il) EXPECT_EQ(head_count_kv[il], m.mla_layers.count(il) ? 1 : 0) << il;

    EXPECT_EQ(file->tensors().size(), expected_tensor_count(m));
    std::map<std::string, size_t> type_counts;
    for (const TensorInfo& t : file->tensors()) {
        ++type_counts[std::string(tensor::traits(t.type).name)];
        EXPECT_NE(t.data, nullptr) << t.name;
        EXPECT_EQ(t.file_offset % 32, 0u) << t.name;
        EXPECT_EQ(t.part, 0u);
    }
    if (!m.type_counts.empty()) {
        EXPECT_EQ(type_counts, m.type_counts);
    }

    // Spot checks from the spec: the conv weights are 4-D, ssm_a has no suffix, MLA is absorbed.
    const TensorInfo* conv = file->find_tensor("blk.0.ssm_conv1d_q.weight");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->ne.size(), m.conv_dims);
    EXPECT_EQ(conv->ne[0], 4);
    EXPECT_EQ(conv->type, tensor::Type::F32);
    EXPECT_NE(file->find_tensor("blk.0.ssm_a"), nullptr);
    EXPECT_NE(file->find_tensor("blk.3.attn_k_b.weight"), nullptr);
    EXPECT_EQ(file->find_tensor("blk.3.attn_kv_b.weight"), nullptr);
    EXPECT_EQ(file->find_tensor("blk.3.attn_q_a_norm.weight") != nullptr, m.q_lora);
}

INSTANTIATE_TEST_SUITE_P(All, FixtureModel, ::testing::ValuesIn(kModels), [](const auto& info) {
    std::string name = info.param.path;
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
});

TEST(FixtureModels, CasesJsonAgreesWithTheLayerMapsAbove) {
    for (const char* dir : {"tiny-k3", "tiny-k3-mxfp4", "tiny-k3-q4k"}) {
        const auto cases = nlohmann::json::parse(testing::read_text(testing::fixture(std::string(dir) + "/cases.json")));
        const auto& info = cases["generator"]["info"];
        EXPECT_EQ(info["mla_layers"], nlohmann::json({3, 7, 8})) << dir;
        EXPECT_EQ(info["n_layer"], 9) << dir;
        EXPECT_EQ(info["attn_res_block_size"], 3) << dir;
        EXPECT_EQ(info["n_layer_dense_lead"], 1) << dir;
    }
}

TEST(FixtureModels, QuantZooHoldsFifteenTypesOf512x64) {
    const auto zoo = GgufFile::open(testing::fixture("quants/zoo.gguf"));
    const auto info = nlohmann::json::parse(testing::read_text(testing::fixture("quants/zoo_info.json")));
    EXPECT_EQ(zoo->get_string("general.architecture"), "quant-zoo");
    ASSERT_EQ(zoo->tensors().size(), 15u);
    for (const auto& [name, type] : info["types"].items()) {
        const TensorInfo* t = zoo->find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(uint32_t(t->type), type["ggml_type_id"].get<uint32_t>()) << name;
        EXPECT_EQ(tensor::traits(t->type).block_size, type["block_size"].get<uint32_t>()) << name;
        EXPECT_EQ(tensor::traits(t->type).block_bytes, type["block_bytes"].get<uint32_t>()) << name;
        EXPECT_EQ(t->n_bytes, type["tensor_bytes"].get<uint64_t>()) << name;
        EXPECT_EQ(t->ne, (std::vector<int64_t>{512, 64}));
    }
}

}  // namespace
}  // namespace k3::gguf
