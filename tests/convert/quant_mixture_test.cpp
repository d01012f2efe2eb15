// llama-quantize's mixture rules: the Q4_K_M plan must reproduce the tensor types llama-quantize
// wrote into fixtures/tiny-k3-q4k/model.gguf; the other mixtures are checked on the same tensor
// list against the rules worked out by hand (llama.cpp src/llama-quant.cpp).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "convert/quant_mixture.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::convert {
namespace {

using tensor::Type;

struct Fixture {
    std::unique_ptr<gguf::GgufFile> file = gguf::GgufFile::open(testing::fixture("tiny-k3-q4k/model.gguf"));
    std::vector<MixtureTensor> tensors;  // as the f32 source had them
    MixtureModel model;

    Fixture() {
        for (const gguf::TensorInfo& t : file->tensors()) tensors.push_back({t.name, t.ne, Type::F32});
        model.n_layer = int(*file->get_uint("kimi-k3.block_count"));
        model.n_expert = int(*file->get_uint("kimi-k3.expert_count"));
        const auto n_head = *file->get_uint("kimi-k3.attention.head_count");
        const auto n_head_kv = file->get_int_array("kimi-k3.attention.head_count_kv")->at(0);
        model.n_gqa = n_head_kv == 0 ? 0 : int(n_head / n_head_kv);
    }
};

TEST(QuantMixture, Q4KMReproducesLlamaQuantizeOnTinyK3) {
    Fixture f;
    const QuantMixture plan(Mixture::Q4_K_M, f.model, f.tensors);
    int fallbacks = 0;
    std::map<Type, int> counts;
    for (size_t i = 0; i < f.tensors.size(); ++i) {
        const TypeChoice choice = plan.choose_type(i);
        EXPECT_EQ(choice.type, f.file->tensors()[i].type) << f.tensors[i].name;
        fallbacks += choice.fell_back();
        ++counts[choice.type];
    }
    // cases.json "quantize": 104 F32, 117 Q4_K, 12 Q6_K, 9 Q5_0 (all nine are fallbacks).
    EXPECT_EQ(fallbacks, 9);
    EXPECT_EQ(counts[Type::F32], 104);
    EXPECT_EQ(counts[Type::Q4_K], 117);
    EXPECT_EQ(counts[Type::Q6_K], 12);
    EXPECT_EQ(counts[Type::Q5_0], 9);
    EXPECT_EQ(mixture_file_type(Mixture::Q4_K_M), *f.file->get_uint("general.file_type"));
}

// Expected type of a quantizable tensor of the tiny model under `mixture`, from the rules by hand:
// 9 layers, 4 experts, n_gqa 0, attn_v in layers 0,1,2,4,5,6 (ranks 0..5).
Type expected_by_hand(Mixture mixture, const std::string& name, int64_t row_length) {
    const bool attn_v = name.find("attn_v.weight") != std::string::npos;
    const bool ffn_down = name.find("ffn_down") != std::string::npos;
    const bool attn_output = name.find("attn_output.weight") != std::string::npos;
    const int layer = name.rfind("blk.", 0) == 0 ? std::stoi(name.substr(4)) : -1;
    Type type;
    if (name == "output.weight") return Type::Q6_K;
    switch (mixture) {
        case Mixture::Q2_K: type = attn_v || ffn_down || attn_output ? Type::Q3_K : Type::Q2_K; break;
        case Mixture::Q3_K_M:
            // attn_v ranks 0, 1 are layers 0, 1; n_layer/16 = 0 so no ffn_down gets Q5_K.
            type = attn_v ? (layer <= 1 ? Type::Q5_K : Type::Q4_K) : ffn_down || attn_output ? Type::Q4_K : Type::Q3_K;
            break;
        case Mixture::Q5_K_M:
            // use_more_bits: attn_v ranks 2, 5 (layers 2, 6); ffn_down layers 0, 3, 6, 7, 8.
            type = (attn_v && (layer == 2 || layer == 6)) ||
                           (ffn_down && (layer == 0 || layer == 3 || layer == 6 || layer == 7 || layer == 8))
                       ? Type::Q6_K
                       : Type::Q5_K;
            break;
        default: type = Type::Q6_K; break;
    }
    if (row_length % 256 == 0) return type;
    switch (type) {
        case Type::Q2_K:
        case Type::Q3_K: return Type::Q4_0;
        case Type::Q4_K: return Type::Q5_0;
        case Type::Q5_K: return Type::Q5_1;
        default: return Type::Q8_0;
    }
}

TEST(QuantMixture, OtherMixturesFollowTheRulesOnTinyK3) {
    Fixture f;
    for (Mixture mixture : {Mixture::Q2_K, Mixture::Q3_K_M, Mixture::Q5_K_M, Mixture::Q6_K}) {
        const QuantMixture plan(mixture, f.model, f.tensors);
        for (size_t i = 0; i < f.tensors.size(); ++i) {
            const Type stored = f.file->tensors()[i].type;
            const Type expected = stored == Type::F32 ? Type::F32 : expected_by_hand(mixture, f.tensors[i].name, f.tensors[i].ne[0]);
            EXPECT_EQ(plan.choose_type(i).type, expected) << mixture_name(mixture) << " " << f.tensors[i].name;
        }
    }
}

TEST(QuantMixture, TiedEmbeddingsTakeTheOutputRule) {
    const std::vector<MixtureTensor> tensors = {{"token_embd.weight", {256, 1000}, Type::F32},
                                                {"blk.0.ffn_up.weight", {256, 512}, Type::F32}};
    const QuantMixture plan(Mixture::Q4_K_M, {1, 0, 1}, tensors);
    EXPECT_EQ(plan.choose_type(0).type, Type::Q6_K);
    EXPECT_EQ(plan.choose_type(1).type, Type::Q4_K);
}

TEST(QuantMixture, RowsOfNoBlockSizeFallToF16) {
    const QuantMixture plan(Mixture::Q4_K_M, {1, 0, 1}, {{"blk.0.ffn_up.weight", {100, 512}, Type::BF16}});
    EXPECT_EQ(plan.choose_type(0).type, Type::F16);
    EXPECT_TRUE(plan.choose_type(0).fell_back());
}

TEST(QuantMixture, ParsesMixtureNames) {
    EXPECT_EQ(parse_mixture("q4_k_m"), Mixture::Q4_K_M);
    EXPECT_EQ(parse_mixture("Q2_K"), Mixture::Q2_K);
    EXPECT_EQ(parse_mixture("Q4_K_S"), std::nullopt);
    EXPECT_EQ(mixture_name(Mixture::Q3_K_M), "Q3_K_M");
}

TEST(QuantMixture, MoEDownProjectionOutsideTheLayersIsAnError) {
    const std::vector<MixtureTensor> tensors = {{"ffn_down_exps.weight", {256, 256, 4}, Type::F32}};
    EXPECT_THROW(QuantMixture(Mixture::Q4_K_M, {2, 4, 0}, tensors), Error);
}

}  // namespace
}  // namespace k3::convert
