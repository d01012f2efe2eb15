// The forward pass with exact numerics (f32 activations) against llama.cpp's f32 reference logits
// for every model fixture (../shared/fixtures/README.md section 5; the f32act twin of quantised
// ones): every row within 0.03, whole-sequence batch and token by token, greedy continuations
// exact, several sequences in one batch.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "kernels/matmul.h"  // Numerics
#include "model/fixture_cases.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "tensor/tensor_type.h"

namespace k3 {
namespace {

using testing::FixtureCase;
using testing::ModelFixture;

constexpr float kLogitTolerance = 0.03f;  // README section 5

struct Loaded {
    ModelFixture fixture;
    std::unique_ptr<runtime::Engine> engine;
};

const Loaded& load(const std::string& dir) {
    static std::map<std::string, Loaded> cache;
    auto it = cache.find(dir);
    if (it == cache.end()) {
        Loaded l;
        l.fixture = testing::load_model_fixture(dir);
        runtime::EngineOptions options;
        options.n_threads = 2;
        options.numerics = kernels::Numerics::exact;  // the references multiply with f32 activations
        l.engine = runtime::Engine::load(l.fixture.model_path, options);
        it = cache.emplace(dir, std::move(l)).first;
    }
    return it->second;
}

class FixtureParity : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (GetParam() == "tiny-k3-q4k") {
            for (tensor::Type t : {tensor::Type::Q4_K, tensor::Type::Q6_K, tensor::Type::Q5_0})
                if (!tensor::traits(t).dequantize_row) GTEST_SKIP() << "k-quant dequantization has not landed";
        }
        loaded_ = &load(GetParam());
    }
    const ModelFixture& fixture() const { return loaded_->fixture; }
    const runtime::Engine& engine() const { return *loaded_->engine; }

    // Each logit row i of `logits` (the case's rows from `first`) against the reference.
    void expect_rows_match(const FixtureCase& c, const std::vector<float>& logits, int64_t first, int64_t n_rows,
                           const char* how) const {
        const int64_t V = fixture().n_vocab;
        ASSERT_EQ(int64_t(logits.size()), n_rows * V);
        float worst = 0.0f;
        for (int64_t i = 0; i < n_rows; ++i) {
            const float d = testing::max_abs_diff(logits.data() + i * V, fixture().reference_row(c, first + i), V);
            EXPECT_LE(d, kLogitTolerance) << GetParam() << " " << c.name << " " << how << " row " << first + i;
            worst = std::max(worst, d);
        }
        RecordProperty(c.name + "_" + how + "_max_abs_diff", std::to_string(worst));
    }

private:
    const Loaded* loaded_ = nullptr;
};

TEST_P(FixtureParity, WholeSequenceInOneBatchMatchesReference) {
    for (const FixtureCase& c : fixture().cases) {
        auto session = engine().new_session();
        const std::vector<float> logits = session->eval(c.tokens, /*all_logits=*/true);
        expect_rows_match(c, logits, 0, int64_t(c.tokens.size()), "batch");
    }
}

TEST_P(FixtureParity, TokenByTokenMatchesReference) {
    const int64_t V = fixture().n_vocab;
    for (const FixtureCase& c : fixture().cases) {
        auto session = engine().new_session();
        std::vector<float> logits;
        for (int32_t token : c.tokens) {
            const std::vector<float> row = session->eval(std::span(&token, 1));
            ASSERT_EQ(int64_t(row.size()), V);
            logits.insert(logits.end(), row.begin(), row.end());
        }
        expect_rows_match(c, logits, 0, int64_t(c.tokens.size()), "sequential");
    }
}

// Pieces of 7 tokens: state carried across pieces that do not line up with KDA chunks.
TEST_P(FixtureParity, PiecesOfSevenTokensMatchReference) {
    for (const FixtureCase& c : fixture().cases) {
        auto session = engine().new_session();
        for (size_t first = 0; first < c.tokens.size(); first += 7) {
            const size_t n = std::min<size_t>(7, c.tokens.size() - first);
            const std::vector<float> logits = session->eval(std::span(c.tokens).subspan(first, n), true);
            expect_rows_match(c, logits, int64_t(first), int64_t(n), "pieces7");
        }
    }
}

TEST_P(FixtureParity, GreedyContinuationIsExact) {
    for (const FixtureCase& c : fixture().cases) {
        auto session = engine().new_session();
        std::vector<float> logits = session->eval(c.prompt);
        std::vector<int32_t> generated;
        for (size_t i = 0; i < c.generated.size(); ++i) {
            const int32_t next = runtime::argmax(logits);
            generated.push_back(next);
            logits = session->eval(std::span(&next, 1));
        }
        EXPECT_EQ(generated, c.generated) << GetParam() << " " << c.name;
    }
}

// All cases (different lengths) in one forward pass give each case's own logits. Not bit for
// bit: batching changes how many tokens each expert sees, and 1-2 token products take the
// per-type dot kernel while larger ones dequantize a tile first (another summation order).
constexpr float kBatchingTolerance = 2e-3f;
TEST_P(FixtureParity, SequencesBatchedTogetherMatchEachAlone) {
    std::vector<std::unique_ptr<runtime::Session>> sessions;
    std::vector<runtime::SequenceInput> inputs;
    for (const FixtureCase& c : fixture().cases) {
        sessions.push_back(engine().new_session());
        inputs.push_back({sessions.back().get(), c.tokens, true, {}});
    }
    engine().decode(inputs);
    std::vector<std::unique_ptr<runtime::Session>> alone;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const FixtureCase& c = fixture().cases[i];
        expect_rows_match(c, inputs[i].logits, 0, int64_t(c.tokens.size()), "multi_sequence");
        alone.push_back(engine().new_session());
        const std::vector<float> own = alone.back()->eval(c.tokens, true);
        EXPECT_LE(testing::max_abs_diff(own.data(), inputs[i].logits.data(), int64_t(own.size())), kBatchingTolerance) << c.name;
    }
    // A decode step of every sequence together (one token each) equals each one's own step.
    std::vector<int32_t> next(inputs.size());
    std::vector<runtime::SequenceInput> step;
    for (size_t i = 0; i < inputs.size(); ++i) next[i] = fixture().cases[i].tokens.front();
    for (size_t i = 0; i < inputs.size(); ++i) step.push_back({sessions[i].get(), std::span(&next[i], 1), false, {}});
    engine().decode(step);
    for (size_t i = 0; i < step.size(); ++i) {
        const std::vector<float> own = alone[i]->eval(std::span(&next[i], 1));
        ASSERT_EQ(own.size(), step[i].logits.size());
        EXPECT_LE(testing::max_abs_diff(own.data(), step[i].logits.data(), int64_t(own.size())), kBatchingTolerance);
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureParity, ::testing::Values("tiny-k3", "tiny-k3-mxfp4", "tiny-k3-q4k", "tiny-k3-native"),
                         [](const auto& info) {
                             std::string name = info.param;
                             for (char& ch : name)
                                 if (ch == '-') ch = '_';
                             return name;
                         });

}  // namespace
}  // namespace k3
