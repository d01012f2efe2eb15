// KDA's two delta-rule paths (k3-architecture.md §4.4 recurrence, §4.5 chunked form) agree:
// on random heads, under decays far stronger than K3's, and through a whole model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/fixture_cases.h"
#include "model/kda.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace k3 {
namespace {

struct RandomHead {
    int64_t n, D;
    std::vector<float> q, k, v, g, beta;

    RandomHead(int64_t n_tokens, int64_t head_dim, float min_log_decay, uint32_t seed) : n(n_tokens), D(head_dim) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_real_distribution<float> decay(min_log_decay, 0.0f), unit(0.0f, 1.0f);
        auto unit_rows = [&](std::vector<float>& x, float scale) {
            x.resize(size_t(n * D));
            for (int64_t t = 0; t < n; ++t) {
                float norm = 0.0f;
                for (int64_t d = 0; d < D; ++d) norm += (x[size_t(t * D + d)] = normal(rng)) * x[size_t(t * D + d)];
                for (int64_t d = 0; d < D; ++d) x[size_t(t * D + d)] *= scale / std::sqrt(norm);
            }
        };
        unit_rows(q, 1.0f / std::sqrt(float(D)));
        unit_rows(k, 1.0f);
        v.resize(size_t(n * D));
        for (float& x : v) x = normal(rng);
        g.resize(size_t(n * D));
        for (float& x : g) x = decay(rng);
        beta.resize(size_t(n));
        for (float& x : beta) x = unit(rng);
    }

    std::vector<float> run(bool chunked, std::vector<float>& state) const {
        std::vector<float> out(size_t(n * D));
        const model::KdaHeadRun r{q.data(), k.data(), v.data(), g.data(), beta.data(), D, 1, n, D, out.data(), D};
        std::vector<float> scratch(size_t(model::kda_scratch_floats(D, model::kKdaChunk)));
        if (chunked) model::kda_chunked(r, state.data(), model::kKdaChunk, scratch.data());
        else model::kda_recurrent(r, state.data(), scratch.data());
        return out;
    }
};

void expect_paths_agree(const RandomHead& head, float tolerance) {
    std::vector<float> state_r(size_t(head.D * head.D), 0.0f), state_c = state_r;
    // Two runs each so the second starts from a non-zero state.
    for (int pass = 0; pass < 2; ++pass) {
        const std::vector<float> o_r = head.run(false, state_r), o_c = head.run(true, state_c);
        for (size_t i = 0; i < o_r.size(); ++i) {
            ASSERT_TRUE(std::isfinite(o_c[i])) << i;
            ASSERT_NEAR(o_c[i], o_r[i], tolerance) << "output " << i << " pass " << pass;
        }
        for (size_t i = 0; i < state_r.size(); ++i) ASSERT_NEAR(state_c[i], state_r[i], tolerance) << "state " << i;
    }
}

TEST(KdaPaths, ChunkedMatchesRecurrenceWithK3Decay) {
    expect_paths_agree(RandomHead(45, 16, -5.0f, 1), 1e-4f);  // partial last chunk
}

TEST(KdaPaths, ChunkedMatchesRecurrenceWithWideHeads) { expect_paths_agree(RandomHead(33, 128, -5.0f, 2), 1e-4f); }

// The softplus gate is unbounded: per-token log-decays of -200 make exp(G) underflow to 0 over
// a chunk; the chunked form must still only exponentiate differences.
TEST(KdaPaths, ChunkedStaysFiniteUnderExtremeDecay) { expect_paths_agree(RandomHead(40, 16, -200.0f, 3), 1e-4f); }

TEST(KdaPaths, ChunkedAndRecurrentAgreeThroughTheModelOn512Tokens) {
    const std::string path = testing::fixture("tiny-k3/model.gguf");
    std::mt19937 rng(7);
    std::vector<int32_t> tokens(512);
    for (int32_t& t : tokens) t = int32_t(rng() % 1000);
    std::vector<float> logits[2];
    for (int chunked = 0; chunked < 2; ++chunked) {
        runtime::EngineOptions options;
        options.n_threads = 2;
        options.kda_mode = chunked ? model::KdaMode::chunked : model::KdaMode::recurrent;
        auto engine = runtime::Engine::load(path, options);
        logits[chunked] = engine->new_session()->eval(tokens, true);
    }
    ASSERT_EQ(logits[0].size(), logits[1].size());
    const float d = testing::max_abs_diff(logits[0].data(), logits[1].data(), int64_t(logits[0].size()));
    RecordProperty("max_abs_diff", std::to_string(d));
    EXPECT_LE(d, 0.003f);  // a tenth of the parity tolerance
}

}  // namespace
}  // namespace k3
