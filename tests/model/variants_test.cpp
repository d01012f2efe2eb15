// Files that differ from the fixtures the way real K3 GGUFs may: re-stored shapes and key
// types (same model, so the same logits), optional parts absent, and broken files (an error
// that names the tensor and both shapes).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/fixture_cases.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3 {
namespace {

using gguf::Value;
using gguf::ValueType;

// How to re-write one tensor: keep, drop, or replace (new type, shape and bytes).
struct TensorEdit {
    bool drop = false;
    std::optional<std::vector<int64_t>> ne;  // new shape, same bytes
    std::optional<std::vector<float>> f32;   // new F32 contents (with ne)
};

struct Rewrite {
    std::map<std::string, Value> set_keys;
    std::vector<std::string> drop_keys;
    std::map<std::string, TensorEdit> tensors;
    std::vector<std::pair<std::string, std::vector<float>>> add_f32;  // name -> values, shape in add_ne
    std::map<std::string, std::vector<int64_t>> add_ne;
};

std::string rewrite_model(const std::string& source, const std::string& target, const Rewrite& rw) {
    auto in = gguf::GgufFile::open(source);
    gguf::GgufWriter out(target);
    for (const auto& [key, value] : in->metadata()) {
        if (std::find(rw.drop_keys.begin(), rw.drop_keys.end(), key) != rw.drop_keys.end()) continue;
        auto it = rw.set_keys.find(key);
        out.set(key, it != rw.set_keys.end() ? it->second : value);
    }
    for (const auto& [key, value] : rw.set_keys)
        if (!in->find(key)) out.set(key, value);
    std::vector<std::pair<std::string, std::vector<uint8_t>>> data;
    for (const gguf::TensorInfo& t : in->tensors()) {
        auto it = rw.tensors.find(t.name);
        const TensorEdit edit = it != rw.tensors.end() ? it->second : TensorEdit{};
        if (edit.drop) continue;
        if (edit.f32) {
            out.add_tensor(t.name, tensor::Type::F32, *edit.ne);
            data.emplace_back(t.name, std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(edit.f32->data()),
                                                           reinterpret_cast<const uint8_t*>(edit.f32->data() + edit.f32->size())));
        } else {
            out.add_tensor(t.name, t.type, edit.ne.value_or(t.ne));
            data.emplace_back(t.name, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
        }
    }
    for (const auto& [name, values] : rw.add_f32) {
        out.add_tensor(name, tensor::Type::F32, rw.add_ne.at(name));
        data.emplace_back(name, std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(values.data()),
                                                     reinterpret_cast<const uint8_t*>(values.data() + values.size())));
    }
    for (const auto& [name, bytes] : data) out.write_tensor(name, bytes.data(), bytes.size());
    out.finish();
    return target;
}

Value int_array(ValueType type, const std::vector<int64_t>& values) {
    gguf::Array a;
    a.element_type = type;
    for (int64_t v : values) {
        Value item;
        item.type = type;
        if (type == ValueType::INT64 || type == ValueType::INT32 || type == ValueType::INT8) item.data = int64_t(v);
        else item.data = uint64_t(v);
        a.items.push_back(item);
    }
    return Value{ValueType::ARRAY, a};
}

std::unique_ptr<runtime::Engine> load(const std::string& path) {
    runtime::EngineOptions options;
    options.n_threads = 2;
    return runtime::Engine::load(path, options);
}

std::vector<float> logits_of(const runtime::Engine& engine, const std::vector<int32_t>& tokens) {
    return engine.new_session()->eval(tokens, true);
}

std::vector<float> sequential_logits_of(const runtime::Engine& engine, const std::vector<int32_t>& tokens) {
    auto session = engine.new_session();
    std::vector<float> all;
    for (int32_t t : tokens) {
        const std::vector<float> row = session->eval(std::span(&t, 1));
        all.insert(all.end(), row.begin(), row.end());
    }
    return all;
}

class ModelVariants : public ::testing::Test {
protected:
    static void SetUpTestSuite() { fixture_ = new testing::ModelFixture(testing::load_model_fixture("tiny-k3")); }
    static void TearDownTestSuite() { delete fixture_; }
    const testing::FixtureCase& medium() const { return fixture_->cases[1]; }

    // The whole medium case in one batch against the llama.cpp reference.
    void expect_matches_reference(const runtime::Engine& engine) const {
        const std::vector<float> logits = logits_of(engine, medium().tokens);
        for (size_t i = 0; i < medium().tokens.size(); ++i)
            ASSERT_LE(testing::max_abs_diff(logits.data() + i * 1024, fixture_->reference_row(medium(), int64_t(i)), 1024), 0.03f)
                << "row " << i;
    }
    // A variant without a reference: finite, and batch == token by token.
    void expect_self_consistent(const runtime::Engine& engine) const {
        const std::vector<float> batch = logits_of(engine, medium().tokens);
        const std::vector<float> sequential = sequential_logits_of(engine, medium().tokens);
        for (float x : batch) ASSERT_TRUE(std::isfinite(x));
        EXPECT_LE(testing::max_abs_diff(batch.data(), sequential.data(), int64_t(batch.size())), 3e-3f);
    }
    std::string source() const { return fixture_->model_path; }

    testing::ScratchDir dir_;
    static testing::ModelFixture* fixture_;
};
testing::ModelFixture* ModelVariants::fixture_ = nullptr;

TEST_F(ModelVariants, ConvStored3DAndPerLayerArraysOfOtherIntegerTypesGiveTheSameModel) {
    Rewrite rw;
    for (int il : {0, 1, 2, 4, 5, 6})
        for (const char* qkv : {"q", "k", "v"})
            rw.tensors["blk." + std::to_string(il) + ".ssm_conv1d_" + qkv + ".weight"].ne = std::vector<int64_t>{4, 1, 64};
    rw.set_keys["kimi-k3.attention.head_count_kv"] = int_array(ValueType::UINT8, {0, 0, 0, 1, 0, 0, 0, 1, 1});
    rw.set_keys["kimi-k3.attention.head_count"] = int_array(ValueType::INT64, std::vector<int64_t>(9, 4));
    rw.set_keys["kimi-k3.feed_forward_length"] = int_array(ValueType::UINT32, std::vector<int64_t>(9, 128));
    expect_matches_reference(*load(rewrite_model(source(), dir_.file("v.gguf"), rw)));
}

TEST_F(ModelVariants, AbsentSharedExpertsEqualSharedExpertsWithZeroOutput) {
    Rewrite zero, absent;
    for (int il = 1; il < 9; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        zero.tensors[p + "ffn_down_shexp.weight"] = {false, std::vector<int64_t>{32, 64}, std::vector<float>(32 * 64, 0.0f)};
        for (const char* t : {"ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight"})
            absent.tensors[p + t].drop = true;
    }
    absent.drop_keys.push_back("kimi-k3.expert_shared_count");
    const auto a = load(rewrite_model(source(), dir_.file("zero.gguf"), zero));
    const auto b = load(rewrite_model(source(), dir_.file("absent.gguf"), absent));
    const std::vector<float> la = logits_of(*a, medium().tokens), lb = logits_of(*b, medium().tokens);
    EXPECT_LE(testing::max_abs_diff(la.data(), lb.data(), int64_t(la.size())), 1e-4f);
}

TEST_F(ModelVariants, KimiLinearGatePlainResidualPlainQAndFullWidthExpertsRun) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 0.125f);
    auto random = [&](size_t n) {
        std::vector<float> v(n);
        for (float& x : v) x = normal(rng);
        return v;
    };
    Rewrite rw;
    rw.drop_keys = {"kimi-k3.kda.gate_lower_bound", "kimi-k3.expert_latent_length"};
    rw.set_keys["kimi-k3.attn_res.block_size"] = Value{ValueType::UINT32, uint64_t(0)};
    rw.tensors["output_res_score.weight"].drop = true;
    for (int il = 0; il < 9; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        rw.tensors[p + "attn_res_score.weight"].drop = true;
        rw.tensors[p + "ffn_res_score.weight"].drop = true;
        if (il == 3 || il >= 7) {  // MLA: plain q instead of the LoRA path
            for (const char* t : {"attn_q_a.weight", "attn_q_a_norm.weight", "attn_q_b.weight"}) rw.tensors[p + t].drop = true;
            rw.add_f32.emplace_back(p + "attn_q.weight", random(64 * 4 * 32));
            rw.add_ne[p + "attn_q.weight"] = {64, 4 * 32};
        }
        if (il >= 1) {  // experts at full width: no routed_down / routed_up / routed_norm
            for (const char* t : {"ffn_routed_down.weight", "ffn_routed_up.weight", "ffn_routed_norm.weight"})
                rw.tensors[p + t].drop = true;
            rw.tensors[p + "ffn_gate_exps.weight"] = {false, std::vector<int64_t>{64, 32, 16}, random(64 * 32 * 16)};
            rw.tensors[p + "ffn_up_exps.weight"] = {false, std::vector<int64_t>{64, 32, 16}, random(64 * 32 * 16)};
            rw.tensors[p + "ffn_down_exps.weight"] = {false, std::vector<int64_t>{32, 64, 16}, random(32 * 64 * 16)};
        }
    }
    expect_self_consistent(*load(rewrite_model(source(), dir_.file("v.gguf"), rw)));
}

TEST_F(ModelVariants, MissingTensorIsNamedWithItsExpectedShape) {
    Rewrite rw;
    rw.tensors["blk.3.attn_kv_a_mqa.weight"].drop = true;
    try {
        load(rewrite_model(source(), dir_.file("v.gguf"), rw));
        FAIL() << "loaded a model without blk.3.attn_kv_a_mqa.weight";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("missing tensor blk.3.attn_kv_a_mqa.weight (expected shape [64, 48])"),
                  std::string::npos) << e.what();
    }
}

TEST_F(ModelVariants, WrongShapeIsNamedWithExpectedAndFoundShapes) {
    Rewrite rw;
    rw.tensors["blk.2.ssm_f_b.weight"].ne = std::vector<int64_t>{32, 32};
    try {
        load(rewrite_model(source(), dir_.file("v.gguf"), rw));
        FAIL() << "loaded a model with a mis-shaped blk.2.ssm_f_b.weight";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("tensor blk.2.ssm_f_b.weight has shape [32, 32], expected [16, 64]"),
                  std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace k3
