// `k3 convert` against llama.cpp's own conversions (fixtures/hf/README.md): for every folder with
// checkpoint/ and expected-<type>.gguf, converting with --outtype <type> must give the same
// tensors (names, types, ne, bytes; ssm_a within 1e-6 relative) and the same metadata.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "gguf/gguf_file.h"
#include "gguf/gguf_value.h"
#include "support/test_support.h"

namespace k3 {
namespace {

namespace fs = std::filesystem;

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

struct Case {
    std::string folder, outtype;
};

std::vector<Case> fixture_cases() {
    std::vector<Case> cases;
    for (const auto& folder : fs::directory_iterator(testing::fixture("hf"))) {
        if (!fs::is_directory(folder.path() / "checkpoint")) continue;
        for (const auto& file : fs::directory_iterator(folder.path())) {
            const std::string name = file.path().filename().string();
            if (starts_with(name, "expected-") && file.path().extension() == ".gguf")
                cases.push_back({folder.path().string(), name.substr(9, name.size() - 9 - 5)});
        }
    }
    return cases;
}

void compare_with_expected(const std::string& actual_path, const std::string& expected_path) {
    const auto actual = gguf::GgufFile::open(actual_path);
    const auto expected = gguf::GgufFile::open(expected_path);

    // Informational keys (README): may be absent, must agree if written.
    const std::set<std::string> informational = {"general.name", "general.size_label"};
    for (const auto& [key, value] : expected->metadata()) {
        const gguf::Value* ours = actual->find(key);
        if (!ours) {
            EXPECT_TRUE(informational.count(key)) << "missing metadata key " << key;
            continue;
        }
        EXPECT_TRUE(*ours == value) << key << ": got " << gguf::value_to_display(*ours) << ", expected "
                                              << gguf::value_to_display(value);
    }
    for (const auto& [key, value] : actual->metadata()) EXPECT_NE(expected->find(key), nullptr) << "extra metadata key " << key;

    EXPECT_EQ(actual->tensors().size(), expected->tensors().size());
    for (const gguf::TensorInfo& want : expected->tensors()) {
        const gguf::TensorInfo* got = actual->find_tensor(want.name);
        if (!got) {
            ADD_FAILURE() << "missing tensor " << want.name;
            continue;
        }
        EXPECT_EQ(got->type, want.type) << want.name;
        EXPECT_EQ(got->ne, want.ne) << want.name;
        if (got->type != want.type || got->ne != want.ne) continue;
        const bool ssm_a = want.name.size() > 6 && want.name.compare(want.name.size() - 6, 6, ".ssm_a") == 0;
        if (!ssm_a) {
            EXPECT_EQ(std::memcmp(got->data, want.data, want.n_bytes), 0) << want.name << " bytes differ";
            continue;
        }
        // -exp(A_log): torch's and libm's f32 exp may differ in the last bits (README).
        for (int64_t i = 0; i < want.n_elements; ++i) {
            float g, w;
            std::memcpy(&g, got->data + 4 * i, 4);
            std::memcpy(&w, want.data + 4 * i, 4);
            EXPECT_NEAR(g, w, 1e-6 * std::fabs(w)) << want.name << "[" << i << "]";
        }
    }
}

TEST(ConvertFixtures, ReproducesLlamaCppConversionsOfEveryCheckpoint) {
    const std::vector<Case> cases = fixture_cases();
    ASSERT_GE(cases.size(), 3u) << "expected tiny-a f32/bf16 and tiny-b f32";
    for (const Case& c : cases) {
        SCOPED_TRACE(c.folder + " " + c.outtype);
        testing::ScratchDir out;
        const auto result = testing::run_k3({"convert", c.folder + "/checkpoint", "-o", out.file("model.gguf"), "--outtype",
                                             c.outtype, "--chat-template", testing::fixture("chat/templates/Kimi-K3.jinja")});
        ASSERT_EQ(result.exit_code, 0) << result.err;
        compare_with_expected(out.file("model.gguf"), c.folder + "/expected-" + c.outtype + ".gguf");
    }
}

TEST(ConvertFixtures, BundledTemplateIsUsedWhenNoneIsGiven) {
    const std::string folder = testing::fixture("hf/tiny-b");
    testing::ScratchDir out;
    const auto result = testing::run_k3({"convert", folder + "/checkpoint", "-o", out.file("model.gguf"), "--outtype", "f32"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto model = gguf::GgufFile::open(out.file("model.gguf"));
    EXPECT_EQ(model->get_string("tokenizer.chat_template"), testing::read_text(testing::fixture("chat/templates/Kimi-K3.jinja")));
}

TEST(ConvertFixtures, SplitOutputHoldsTheSameTensors) {
    const std::string folder = testing::fixture("hf/tiny-a");
    testing::ScratchDir out;
    const auto result = testing::run_k3({"convert", folder + "/checkpoint", "-o", out.file("model.gguf"), "--outtype", "bf16",
                                         "--split-max-size", "700K"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    std::string first_part;
    size_t n_parts = 0;
    for (const auto& file : fs::directory_iterator(out.path())) {
        ++n_parts;
        if (file.path().filename().string().find("-00001-of-") != std::string::npos) first_part = file.path().string();
    }
    ASSERT_FALSE(first_part.empty()) << result.out;
    EXPECT_GT(n_parts, 1u);
    const auto split = gguf::GgufFile::open(first_part);
    const auto expected = gguf::GgufFile::open(folder + "/expected-bf16.gguf");
    ASSERT_EQ(split->tensors().size(), expected->tensors().size());
    EXPECT_EQ(split->part_paths().size(), n_parts);
    for (const gguf::TensorInfo& want : expected->tensors()) {
        const gguf::TensorInfo* got = split->find_tensor(want.name);
        ASSERT_NE(got, nullptr) << want.name;
        if (want.name.find("ssm_a") == std::string::npos) {
            EXPECT_EQ(std::memcmp(got->data, want.data, want.n_bytes), 0) << want.name;
        }
    }
}

TEST(ConvertFixtures, DryRunPrintsTheMapAndWritesNothing) {
    testing::ScratchDir out;
    const auto result = testing::run_k3({"convert", testing::fixture("hf/tiny-a/checkpoint"), "-o", out.file("model.gguf"), "--dry-run"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_FALSE(fs::exists(out.file("model.gguf")));
    for (const char* line : {"kimi-k3.block_count", "language_model.model.layers.3.self_attn.kv_b_proj.weight -> blk.3.attn_v_b.weight [32, 16, 4] bf16",
                             "language_model.model.layers.1.block_sparse_moe.experts.{0..15}.w2.weight_{packed,scale} -> blk.1.ffn_down_exps.weight [64, 64, 16] mxfp4",
                             "language_model.model.layers.0.self_attention_res_norm.weight * language_model.model.layers.0.self_attention_res_proj.weight -> blk.0.attn_res_score.weight [64] f32",
                             "vision_tower.patch_embed.proj.weight -> (skipped: vision)", "242 GGUF tensors"})
        EXPECT_NE(result.out.find(line), std::string::npos) << line;
}

}  // namespace
}  // namespace k3
