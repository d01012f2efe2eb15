// `k3 mock`: the written model opens, has the requested layer map and K3's tensor set (counted
// from spec §2, not from the generator), the fixtures' storage rules, a byte-level vocabulary
// with K3's control tokens and the bundled template, and sane random values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>
#include <random>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "support/test_support.h"
#include "tensor/tensor_type.h"

namespace k3::cli {
namespace {

using nlohmann::json;

std::vector<float> dequantize(const gguf::TensorInfo& t) {
    const tensor::TypeTraits& traits = tensor::traits(t.type);
    std::vector<float> values(size_t(t.n_elements));
    const size_t row = tensor::row_bytes(traits, t.ne[0]);
    for (int64_t r = 0; r < t.rows(); ++r) traits.dequantize_row(t.data + r * row, values.data() + r * t.ne[0], t.ne[0]);
    return values;
}

double rms(const std::vector<float>& v) {
    double sum = 0;
    for (float x : v) sum += double(x) * x;
    return std::sqrt(sum / double(v.size()));
}

TEST(Mock, SixLayerModelHasTheRequestedLayerMapTypesAndVocabulary) {
    testing::ScratchDir dir;
    const std::string path = dir.file("mock.gguf");
    testing::CommandResult r = testing::run_k3({"mock", "-o", path, "--layers", "6", "--mla-every", "3", "--attn-res-block", "2",
                                                "--type", "q8_0", "--expert-type", "mxfp4", "--seed", "7", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;

    r = testing::run_k3({"info", path, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json info = json::parse(r.out);
    const json& s = info["layer_summary"];
    EXPECT_EQ(s["mla"], json({2, 5}));  // (il + 1) % 3 == 0, and the last layer
    EXPECT_EQ(s["kda"], json({0, 1, 3, 4}));
    EXPECT_EQ(s["dense"], json({0}));
    EXPECT_EQ(s["attn_res_block_starts"], json({0, 2, 4}));
    // Spec §2: 4 globals; KDA 18, MLA with LoRA q 13; dense FFN 3, MoE 11.
    EXPECT_EQ(info["tensor_count"], 4 + 4 * 18 + 2 * 13 + 1 * 3 + 5 * 11);
    const json& tok = info["tokenizer"];
    EXPECT_EQ(tok["model"], "gpt2");
    EXPECT_EQ(tok["pre"], "kimi-k2");
    EXPECT_EQ(tok["vocab_size"], 1024);
    EXPECT_EQ(tok["bos"]["text"], "[BOS]");
    EXPECT_EQ(tok["eos"]["text"], "<|end_of_msg|>");
    EXPECT_EQ(tok["merges"], 0);

    const auto file = gguf::GgufFile::open(path);
    EXPECT_EQ(file->get_string("tokenizer.chat_template"), testing::read_text(testing::fixture("chat/templates/Kimi-K3.jinja")));
    const auto tokens = file->get_string_array("tokenizer.ggml.tokens").value();
    const auto token_types = file->get_int_array("tokenizer.ggml.token_type").value();
    EXPECT_EQ(tokens[32], "Ġ");   // GPT-2 image of the space byte
    EXPECT_EQ(tokens[10], "Ċ");   // newline
    EXPECT_EQ(tokens[65], "A");
    EXPECT_EQ(token_types[65], 1);  // NORMAL
    EXPECT_EQ(tokens[1024 - 256 + 3], "<|open|>");
    EXPECT_EQ(tokens[1024 - 256 + 9], "[EOT]");
    EXPECT_EQ(tokens[1023], "[PAD]");
    EXPECT_EQ(token_types[1023], 3);  // CONTROL
    EXPECT_EQ(token_types[500], 5);   // UNUSED filler

    // Storage rules of the fixtures: experts as asked, F32 for norms, conv, ssm_a, biases, router.
    EXPECT_EQ(file->find_tensor("blk.1.ffn_up_exps.weight")->type, tensor::Type::MXFP4);
    EXPECT_EQ(file->find_tensor("blk.0.attn_q.weight")->type, tensor::Type::Q8_0);
    EXPECT_EQ(file->find_tensor("token_embd.weight")->type, tensor::Type::Q8_0);
    for (const char* f32 : {"blk.0.ssm_conv1d_q.weight", "blk.0.ssm_a", "blk.0.ssm_dt.bias", "blk.1.ffn_gate_inp.weight",
                            "blk.1.exp_probs_b.bias", "blk.2.attn_kv_a_norm.weight", "output_res_score.weight"})
        EXPECT_EQ(file->find_tensor(f32)->type, tensor::Type::F32) << f32;
    EXPECT_EQ(file->find_tensor("blk.0.ssm_conv1d_q.weight")->ne, (std::vector<int64_t>{4, 1, 64, 1}));
    EXPECT_EQ(file->find_tensor("blk.2.attn_k_b.weight")->ne, (std::vector<int64_t>{16, 32, 4}));

    // Values: weights ~ N(0, 1/fan_in), norms ~ 1, ssm_a = -exp(A_log) < 0.
    const std::vector<float> wq = dequantize(*file->find_tensor("blk.0.attn_q.weight"));
    EXPECT_NEAR(rms(wq), 1.0 / 8.0, 0.01);  // fan-in 64
    const std::vector<float> experts = dequantize(*file->find_tensor("blk.1.ffn_down_exps.weight"));
    EXPECT_NEAR(rms(experts), 1.0 / std::sqrt(32.0), 0.03);  // fan-in 32, MXFP4-rounded
    for (float a : dequantize(*file->find_tensor("blk.0.ssm_a"))) EXPECT_TRUE(a <= -1.0f && a >= -16.0f) << a;
    for (float w : dequantize(*file->find_tensor("output_norm.weight"))) EXPECT_NEAR(w, 1.0f, 0.15f);

    // The model layer accepts it.
    const model::HParams hp = model::HParams::from_gguf(*file);
    EXPECT_EQ(hp.n_layer, 6);
    EXPECT_TRUE(hp.is_mla(2));
    EXPECT_FALSE(hp.is_mla(3));
}

TEST(Mock, SameSeedSameBytesOtherSeedOtherBytes) {
    testing::ScratchDir dir;
    for (const auto& [name, seed] : {std::pair{"a.gguf", "3"}, std::pair{"b.gguf", "3"}, std::pair{"c.gguf", "4"}}) {
        const testing::CommandResult r = testing::run_k3({"mock", "-o", dir.file(name), "--seed", seed, "-t", name[0] == 'b' ? "1" : "3", "-q"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    EXPECT_EQ(testing::read_bytes(dir.file("a.gguf")), testing::read_bytes(dir.file("b.gguf")));  // thread count too
    EXPECT_NE(testing::read_bytes(dir.file("a.gguf")), testing::read_bytes(dir.file("c.gguf")));
}

TEST(Mock, SplitOutputOpensAsOneModel) {
    testing::ScratchDir dir;
    const testing::CommandResult r = testing::run_k3({"mock", "-o", dir.file("m.gguf"), "--split-max-size", "1M", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> parts;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) parts.push_back(entry.path().string());
    std::sort(parts.begin(), parts.end());
    ASSERT_GT(parts.size(), 2u);
    char first[64];
    std::snprintf(first, sizeof first, "m-00001-of-%05zu.gguf", parts.size());
    EXPECT_EQ(parts[0], dir.file(first));
    for (const std::string& p : parts) EXPECT_LE(std::filesystem::file_size(p), 1024u * 1024u) << p;
    const auto file = gguf::GgufFile::open(parts[0]);
    EXPECT_EQ(file->part_paths(), parts);
    EXPECT_EQ(file->tensors().size(), 242u);  // the tiny preset has tiny-k3's tensor set
}

TEST(Mock, BenchPresetDrySizeIsTwoToThreeGigabytes) {
    const testing::CommandResult r = testing::run_k3({"mock", "--preset", "bench", "--dry-run"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json dry = json::parse(r.out);
    EXPECT_GE(dry["tensor_bytes"].get<uint64_t>(), 2000000000ull);
    EXPECT_LE(dry["tensor_bytes"].get<uint64_t>(), 3000000000ull);
    // 16 layers: MLA at 3, 7, 11, 15 -> 12 KDA x 18 + 4 MLA x 13 + 3 dense + 15 MoE x 11 + 4.
    EXPECT_EQ(dry["tensors"], 12 * 18 + 4 * 13 + 3 + 15 * 11 + 4);
}

// --routing-skew S: each layer's exp_probs_b is -0.08 S ln(r) over a per-layer order of ranks r, so
// that with N(0, 1) router logits the top quarter of experts takes most selections.
TEST(Mock, RoutingSkewBiasesSelectionZipfLike) {
    testing::ScratchDir dir;
    testing::CommandResult r = testing::run_k3({"mock", "-o", dir.file("s.gguf"), "--experts", "32", "--experts-used", "4",
                                                "--routing-skew", "1", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = testing::run_k3({"mock", "-o", dir.file("u.gguf"), "--experts", "32", "--experts-used", "4", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto skewed = gguf::GgufFile::open(dir.file("s.gguf"));
    const auto uniform = gguf::GgufFile::open(dir.file("u.gguf"));
    model::HParams hp = model::HParams::from_gguf(*skewed);
    std::vector<std::vector<float>> biases;
    for (int64_t il = 1; il < hp.n_layer; ++il) {  // layer 0 is dense
        const std::string name = "blk." + std::to_string(il) + ".exp_probs_b.bias";
        for (float b : dequantize(*uniform->find_tensor(name))) EXPECT_EQ(b, 0.0f) << name;
        std::vector<float> bias = dequantize(*skewed->find_tensor(name));
        std::vector<float> sorted(bias);
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
        for (size_t rank = 0; rank < sorted.size(); ++rank)
            EXPECT_NEAR(sorted[rank], -0.08 * std::log(double(rank + 1)), 1e-6) << name << " rank " << rank + 1;
        biases.push_back(std::move(bias));
    }
    EXPECT_NE(biases[0], biases[1]);  // each layer favours other experts

    // Routing N(0, 1) logits with layer 1's bias: the 8 most favoured of 32 experts (a quarter)
    // take well over a quarter of the selections.
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    std::vector<int64_t> count(32);
    for (int trial = 0; trial < 2000; ++trial) {
        std::vector<float> logits(32);
        for (float& l : logits) l = normal(rng);
        for (int32_t e : model::route_token(hp, logits.data(), biases[0]).experts) ++count[size_t(e)];
    }
    std::vector<size_t> by_bias(32);
    std::iota(by_bias.begin(), by_bias.end(), 0);
    std::sort(by_bias.begin(), by_bias.end(), [&](size_t a, size_t b) { return biases[0][a] > biases[0][b]; });
    int64_t top_quarter = 0;
    for (size_t i = 0; i < 8; ++i) top_quarter += count[by_bias[i]];
    EXPECT_GT(double(top_quarter) / (2000.0 * 4), 0.40);  // uniform: 0.25; simulated: 0.48
}

TEST(Mock, RefusesImpossibleShapesAndTypes) {
    testing::ScratchDir dir;
    EXPECT_EQ(testing::run_k3({"mock", "-o", dir.file("x.gguf"), "--vocab", "300"}).exit_code, 1);
    EXPECT_EQ(testing::run_k3({"mock", "-o", dir.file("x.gguf"), "--experts-used", "99"}).exit_code, 1);
    EXPECT_EQ(testing::run_k3({"mock", "-o", dir.file("x.gguf"), "--type", "q9_9"}).exit_code, 2);  // a usage error
    EXPECT_EQ(testing::run_k3({"mock", "-o", dir.file("x.gguf"), "--preset", "huge"}).exit_code, 1);
    EXPECT_EQ(testing::run_k3({"mock", "-o", dir.file("x.gguf"), "--routing-skew", "-1"}).exit_code, 1);
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.gguf")));
}

}  // namespace
}  // namespace k3::cli
