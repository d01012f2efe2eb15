// `k3 info` on every fixture model: the layer map, tensor count and tokenizer summary it
// reports equal what fixtures/README.md, cases.json and hf/README.md state.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace k3::cli {
namespace {

using nlohmann::json;

struct InfoCase {
    const char* path;
    std::vector<int> mla, dense, attn_res_starts;
    size_t n_tensors, vocab;
    int bos, eos;
};

void PrintTo(const InfoCase& c, std::ostream* os) { *os << c.path; }

// fixtures/README.md §1 and §9, hf/README.md (tiny-a: attn-res block 4, tiny-b: 3, no q LoRA).
const InfoCase kCases[] = {
    {"tiny-k3/model.gguf", {3, 7, 8}, {0}, {0, 3, 6}, 242, 1024, 1000, 1002},
    {"tiny-k3-mxfp4/model.gguf", {3, 7, 8}, {0}, {0, 3, 6}, 242, 1024, 1000, 1002},
    {"tiny-k3-q4k/model.gguf", {3, 7, 8}, {0}, {0, 3, 6}, 242, 1024, 1000, 1002},
    {"hf/tiny-a/expected-f32.gguf", {3, 7, 8}, {0}, {0, 4, 8}, 242, 1280, 1024, 1026},
    {"hf/tiny-a/expected-bf16.gguf", {3, 7, 8}, {0}, {0, 4, 8}, 242, 1280, 1024, 1026},
    {"hf/tiny-b/expected-f32.gguf", {3, 7, 8}, {0}, {0, 3, 6}, 236, 1280, 1024, 1026},
};

class InfoOnFixture : public ::testing::TestWithParam<InfoCase> {};

TEST_P(InfoOnFixture, JsonReportsLayerMapTensorsAndTokenizer) {
    const InfoCase& c = GetParam();
    const testing::CommandResult r = testing::run_k3({"info", testing::fixture(c.path), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json info = json::parse(r.out);
    EXPECT_EQ(info["architecture"], "kimi-k3");
    EXPECT_EQ(info["n_layer"], 9);
    const json& s = info["layer_summary"];
    EXPECT_EQ(s["mla"], json(c.mla));
    EXPECT_EQ(s["dense"], json(c.dense));
    EXPECT_EQ(s["attn_res_block_starts"], json(c.attn_res_starts));
    EXPECT_EQ(s["kda"].size() + s["mla"].size(), 9u);
    EXPECT_EQ(info["layers"][3]["mixer"], "mla");
    EXPECT_EQ(info["layers"][0]["mixer"], "kda");
    EXPECT_EQ(info["layers"][0]["ffn"], "dense");
    EXPECT_EQ(info["layers"][1]["ffn"], "moe");
    EXPECT_EQ(info["tensor_count"], c.n_tensors);
    const json& tok = info["tokenizer"];
    EXPECT_EQ(tok["model"], "gpt2");
    EXPECT_EQ(tok["pre"], "kimi-k2");
    EXPECT_EQ(tok["vocab_size"], c.vocab);
    EXPECT_EQ(tok["bos"]["id"], c.bos);
    EXPECT_EQ(tok["bos"]["text"], "[BOS]");
    EXPECT_EQ(tok["eos"]["id"], c.eos);
    EXPECT_EQ(tok["eos"]["text"], "<|end_of_msg|>");
    EXPECT_EQ(tok["has_chat_template"], true);
    EXPECT_EQ(info["hyperparameters"]["block_count"], 9);
    uint64_t counted = 0;
    for (const auto& [type, totals] : info["types"].items()) counted += totals["count"].get<uint64_t>();
    EXPECT_EQ(counted, c.n_tensors);
}

INSTANTIATE_TEST_SUITE_P(All, InfoOnFixture, ::testing::ValuesIn(kCases), [](const auto& info) {
    std::string name = info.param.path;
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return name;
});

TEST(Info, TextShowsLayerMapAndTypeTotals) {
    const testing::CommandResult r = testing::run_k3({"info", testing::fixture("tiny-k3-mxfp4/model.gguf")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("layers: 9  (KDA 6, MLA 3; dense 1, MoE 8)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("MLA layers:                 3,7,8"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("attn-res blocks start at:   0,3,6"), std::string::npos) << r.out;
    // fixtures/README.md: 114 BF16, 104 F32, 24 MXFP4 tensors.
    EXPECT_NE(r.out.find("bf16        114 tensors"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("f32         104 tensors"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("mxfp4        24 tensors"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("eos: 1002 <|end_of_msg|>"), std::string::npos) << r.out;
}

TEST(Info, TensorListingOfTheQuantZoo) {
    const testing::CommandResult r = testing::run_k3({"info", testing::fixture("quants/zoo.gguf"), "--tensors", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json info = json::parse(r.out);
    const json zoo = json::parse(testing::read_text(testing::fixture("quants/zoo_info.json")));
    EXPECT_EQ(info["architecture"], "quant-zoo");
    EXPECT_FALSE(info.contains("layers"));
    ASSERT_EQ(info["tensors"].size(), 15u);
    for (const json& t : info["tensors"]) {
        const json& expected = zoo["types"][t["name"].get<std::string>()];
        EXPECT_EQ(t["bytes"], expected["tensor_bytes"]) << t["name"];
        EXPECT_EQ(t["shape"], json({512, 64}));
        EXPECT_EQ(t["offset"].get<uint64_t>() % 32, 0u);
    }
    EXPECT_EQ(info["parameter_count"], 15 * 512 * 64);
}

// Bits per weight follow from the block geometry of spec §9 (bytes per block × 8 / elements):
// Q4_K 144 B / 256, Q6_K 210 B / 256, Q5_0 22 B / 32, F32 4 B / 1.
TEST(Info, BitsPerWeightOfEachTypeInTheQ4KMMixture) {
    const testing::CommandResult r = testing::run_k3({"info", testing::fixture("tiny-k3-q4k/model.gguf"), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json types = json::parse(r.out)["types"];
    EXPECT_DOUBLE_EQ(types["q4_K"]["bits_per_weight"].get<double>(), 144.0 * 8 / 256);
    EXPECT_DOUBLE_EQ(types["q6_K"]["bits_per_weight"].get<double>(), 210.0 * 8 / 256);
    EXPECT_DOUBLE_EQ(types["q5_0"]["bits_per_weight"].get<double>(), 22.0 * 8 / 32);
    EXPECT_DOUBLE_EQ(types["f32"]["bits_per_weight"].get<double>(), 32.0);
}

// The low-bit types' bits per weight are ggml's (ggml-common.h's comments), from the block
// geometry in fixtures/quants-imatrix/zoo_info.json: block_bytes × 8 / block_size.
TEST(Info, BitsPerWeightOfTheLowBitTypes) {
    const testing::CommandResult r = testing::run_k3({"info", testing::fixture("quants-imatrix/zoo.gguf"), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json types = json::parse(r.out)["types"];
    const json zoo = json::parse(testing::read_text(testing::fixture("quants-imatrix/zoo_info.json")))["types"];
    ASSERT_EQ(types.size(), zoo.size());
    for (const auto& [name, expected] : zoo.items()) {
        std::string ggml_name = name;  // the zoo names types in capitals, ggml in lower case but for "_K"
        for (char& c : ggml_name) c = char(std::tolower(static_cast<unsigned char>(c)));
        if (ggml_name.ends_with("_k")) ggml_name.back() = 'K';
        ASSERT_TRUE(types.contains(ggml_name)) << ggml_name;
        EXPECT_DOUBLE_EQ(types[ggml_name]["bits_per_weight"].get<double>(),
                         expected["block_bytes"].get<double>() * 8 / expected["block_size"].get<double>())
            << name;
    }
    EXPECT_DOUBLE_EQ(types["iq1_s"]["bits_per_weight"].get<double>(), 1.5625);
    EXPECT_DOUBLE_EQ(types["iq2_xxs"]["bits_per_weight"].get<double>(), 2.0625);
    EXPECT_DOUBLE_EQ(types["tq1_0"]["bits_per_weight"].get<double>(), 1.6875);
}

TEST(Info, MissingFileAndBadArgumentsFailCleanly) {
    testing::CommandResult r = testing::run_k3({"info", "/nonexistent/model.gguf"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
    r = testing::run_k3({"info"});
    EXPECT_NE(r.exit_code, 0);
    r = testing::run_k3({"info", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("--tensors"), std::string::npos);
}

}  // namespace
}  // namespace k3::cli
