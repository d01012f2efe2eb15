// The HF -> GGUF tensor map on synthetic checkpoints (headers only, sparse data): the full-size
// K3 layout maps every tensor with nothing left over, and incomplete or inconsistent checkpoints
// are rejected before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/synthetic_checkpoint.h"
#include "convert/tensor_plan.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::convert {
namespace {

using testing::HfTensor;
using testing::K3Dims;

ConversionPlan plan_for(const std::string& dir) {
    const K3Config config = read_k3_config(dir + "/config.json");
    const auto checkpoint = SafetensorsCheckpoint::open(dir);
    return plan_conversion(config, *checkpoint, PlanOptions{tensor::Type::BF16});
}

TEST(TensorPlan, FullSizeK3MapsEveryTensorWithNothingLeftOver) {
    const K3Dims dims = testing::real_k3_dims();
    const std::vector<HfTensor> tensors = testing::k3_hf_tensors(dims);
    testing::ScratchDir dir;
    testing::write_synthetic_checkpoint(dir.path(), dims, tensors, 96);

    const K3Config config = read_k3_config(dir.file("config.json"));
    const auto checkpoint = SafetensorsCheckpoint::open(dir.path());
    const ConversionPlan plan = plan_conversion(config, *checkpoint, PlanOptions{tensor::Type::BF16});

    // 69 KDA x 14 + 24 MLA x 9 + 93 x 4 common + 92 MoE x 11 + 3 dense + 4 global (§2.6).
    EXPECT_EQ(plan.tensors.size(), 2573u);
    EXPECT_EQ(plan.n_mxfp4_pairs, 92 * 896 * 3);
    EXPECT_EQ(plan.skipped.size(), 2u);
    EXPECT_EQ(plan.n_source_tensors + int64_t(plan.skipped.size()), int64_t(tensors.size()));
    EXPECT_TRUE(plan.experts_mxfp4);

    std::map<std::string, const PlannedTensor*> by_name;
    for (const PlannedTensor& t : plan.tensors) EXPECT_TRUE(by_name.emplace(t.name, &t).second) << "duplicate " << t.name;
    auto expect = [&](const std::string& name, std::vector<int64_t> ne, tensor::Type type) {
        auto it = by_name.find(name);
        ASSERT_NE(it, by_name.end()) << name;
        EXPECT_EQ(it->second->ne, ne) << name;
        EXPECT_EQ(it->second->type, type) << name;
    };
    using tensor::Type;
    expect("token_embd.weight", {7168, 163840}, Type::BF16);
    expect("output_res_score.weight", {7168}, Type::F32);
    expect("blk.0.ssm_conv1d_q.weight", {4, 1, 12288, 1}, Type::F32);
    expect("blk.0.ssm_a", {96}, Type::F32);
    expect("blk.0.ffn_down.weight", {33792, 7168}, Type::BF16);
    expect("blk.91.attn_k_b.weight", {128, 512, 96}, Type::BF16);
    expect("blk.92.attn_v_b.weight", {512, 128, 96}, Type::BF16);
    expect("blk.92.attn_q_b.weight", {1536, 18432}, Type::BF16);
    expect("blk.1.ffn_gate_exps.weight", {3584, 3072, 896}, Type::MXFP4);
    expect("blk.92.ffn_down_exps.weight", {3072, 3584, 896}, Type::MXFP4);
    expect("blk.5.ffn_gate_inp.weight", {7168, 896}, Type::F32);
    expect("blk.5.ffn_gate_shexp.weight", {7168, 6144}, Type::BF16);
    // One expert stack = 896 x 3072 x 3584 / 32 blocks of 17 bytes (§9: 17,547,264 bytes per expert for all three).
    EXPECT_EQ(by_name["blk.1.ffn_up_exps.weight"]->n_bytes() * 3, 896ull * 17547264ull);
    int64_t mla_layers = 0, kda_layers = 0;
    for (int64_t il = 0; il < 93; ++il) {
        mla_layers += by_name.count("blk." + std::to_string(il) + ".attn_kv_a_mqa.weight");
        kda_layers += by_name.count("blk." + std::to_string(il) + ".ssm_g.weight");
    }
    EXPECT_EQ(mla_layers, 24);
    EXPECT_EQ(kda_layers, 69);
}

// A small K3 (two MLA layers at the end, as in K3) for the error cases.
K3Dims small_dims() { return {5, 64, 256, 128, 4, 16, 4, 32, 32, 16, 8, 16, 4, 2, 64, 32, 1, 2, 1, {3, 4}}; }

std::string plan_error(std::vector<HfTensor> tensors) {
    testing::ScratchDir dir;
    testing::write_synthetic_checkpoint(dir.path(), small_dims(), tensors, 2);
    try {
        plan_for(dir.path());
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::vector<HfTensor> without(std::vector<HfTensor> tensors, const std::string& name) {
    auto it = std::find_if(tensors.begin(), tensors.end(), [&](const HfTensor& t) { return t.name == name; });
    EXPECT_NE(it, tensors.end()) << name;
    if (it != tensors.end()) tensors.erase(it);
    return tensors;
}

HfTensor& named(std::vector<HfTensor>& tensors, const std::string& name) {
    return *std::find_if(tensors.begin(), tensors.end(), [&](const HfTensor& t) { return t.name == name; });
}

TEST(TensorPlan, SmallCheckpointPlansWithoutProblems) {
    testing::ScratchDir dir;
    testing::write_synthetic_checkpoint(dir.path(), small_dims(), testing::k3_hf_tensors(small_dims()), 2);
    const ConversionPlan plan = plan_for(dir.path());
    EXPECT_EQ(plan.n_mxfp4_pairs, 4 * 4 * 3);
}

TEST(TensorPlan, RejectsAMissingExpert) {
    const std::string lost = "language_model.model.layers.2.block_sparse_moe.experts.3.w2.weight_scale";
    const std::string message = plan_error(without(testing::k3_hf_tensors(small_dims()), lost));
    EXPECT_NE(message.find("missing tensor " + lost), std::string::npos) << message;
}

TEST(TensorPlan, RejectsAnUnpairedResidualNormOrProjection) {
    const std::string p = "language_model.model.layers.1.mlp_res_";
    std::string message = plan_error(without(testing::k3_hf_tensors(small_dims()), p + "proj.weight"));
    EXPECT_NE(message.find(p + "norm.weight has no matching " + p + "proj.weight"), std::string::npos) << message;
    message = plan_error(without(testing::k3_hf_tensors(small_dims()), p + "norm.weight"));
    EXPECT_NE(message.find(p + "proj.weight has no matching " + p + "norm.weight"), std::string::npos) << message;
}

TEST(TensorPlan, RejectsAnExtraTensor) {
    std::vector<HfTensor> tensors = testing::k3_hf_tensors(small_dims());
    tensors.push_back({"language_model.model.layers.1.self_attn.extra.weight", "BF16", {4, 4}});
    const std::string message = plan_error(tensors);
    EXPECT_NE(message.find("unexpected tensor language_model.model.layers.1.self_attn.extra.weight"), std::string::npos) << message;
}

TEST(TensorPlan, RejectsAMisshapenTensorAndCountsTheOtherProblems) {
    std::vector<HfTensor> tensors = testing::k3_hf_tensors(small_dims());
    named(tensors, "language_model.model.layers.3.self_attn.kv_b_proj.weight").shape = {4 * 24, 32};
    tensors = without(tensors, "language_model.model.layers.4.self_attn.o_proj.weight");
    const std::string message = plan_error(tensors);
    EXPECT_NE(message.find("kv_b_proj.weight: shape [96, 32], expected [128, 32]"), std::string::npos) << message;
    EXPECT_NE(message.find("(and 1 more problems)"), std::string::npos) << message;
}

TEST(TensorPlan, RejectsFp8Weights) {
    std::vector<HfTensor> tensors = testing::k3_hf_tensors(small_dims());
    named(tensors, "language_model.model.layers.0.self_attn.q_proj.weight").dtype = "F8_E4M3";
    const std::string message = plan_error(tensors);
    EXPECT_NE(message.find("dtype F8_E4M3"), std::string::npos) << message;
    EXPECT_NE(message.find("FP8 checkpoints are unsupported"), std::string::npos) << message;
}

TEST(TensorPlan, ConvertWritesNothingWhenTheCheckpointIsIncomplete) {
    testing::ScratchDir dir;
    const auto tensors = without(testing::k3_hf_tensors(small_dims()), "language_model.lm_head.weight");
    testing::write_synthetic_checkpoint(dir.path(), small_dims(), tensors, 2);
    const auto result = testing::run_k3({"convert", dir.path(), "-o", dir.file("out.gguf")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("missing tensor language_model.lm_head.weight"), std::string::npos) << result.err;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
        const std::string name = entry.path().filename().string();
        EXPECT_TRUE(name == "config.json" || name == "model.safetensors.index.json" || entry.path().extension() == ".safetensors")
            << "left behind: " << name;
    }
}

}  // namespace
}  // namespace k3::convert
