// Norms, softmax, activations and the causal conv against values worked out by hand or from
// the formulas in k3-architecture.md.
#include <algorithm>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <vector>

#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace k3::kernels {
namespace {

TEST(VectorOps, RmsNormScalesByRootMeanSquare) {
    const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f};
    float out[4];
    rms_norm(x, w, 0.0f, 4, out);  // mean(x^2) = 7.5
    const float inv = 1.0f / std::sqrt(7.5f);
    EXPECT_FLOAT_EQ(rms_scale(x, 0.0f, 4), inv);
    EXPECT_FLOAT_EQ(rms_scale(x, 0.5f, 4), 1.0f / std::sqrt(8.0f));  // eps inside the root
    EXPECT_FLOAT_EQ(out[0], 1 * inv);
    EXPECT_FLOAT_EQ(out[2], 3 * inv * 2);
    EXPECT_FLOAT_EQ(out[3], 4 * inv * 0.5f);
}

TEST(VectorOps, L2NormClampsTheNormAtEps) {
    float x[2] = {3, 4};
    l2_norm(x, 1e-5f, 2, x);
    EXPECT_FLOAT_EQ(x[0], 0.6f);
    EXPECT_FLOAT_EQ(x[1], 0.8f);
    float tiny[2] = {3e-7f, 4e-7f};  // ||x|| = 5e-7 < eps: divide by eps
    l2_norm(tiny, 1e-5f, 2, tiny);
    EXPECT_FLOAT_EQ(tiny[0], 3e-7f / 1e-5f);
}

TEST(VectorOps, SoftmaxIsStableForLargeInputs) {
    float x[3] = {1000.0f, 1001.0f, 1000.0f};  // exp(1000) overflows unless the max is subtracted
    softmax(x, 3);
    const double e = std::exp(1.0);
    EXPECT_NEAR(x[0], 1.0 / (2.0 + e), 1e-6);
    EXPECT_NEAR(x[1], e / (2.0 + e), 1e-6);
}

TEST(VectorOps, SituMatchesSpecFormula) {
    // situ(g, u) = [b tanh(g/b) sigmoid(g)] [l tanh(u/l)], b = 4, l = 25
    const float g[2] = {2.0f, -30.0f}, u[2] = {10.0f, 3.0f};
    float out[2];
    situ(g, u, 4.0f, 25.0f, 2, out);
    for (int i = 0; i < 2; ++i) {
        const double expected = 4.0 * std::tanh(g[i] / 4.0) / (1.0 + std::exp(-double(g[i]))) * 25.0 * std::tanh(u[i] / 25.0);
        EXPECT_NEAR(out[i], expected, 1e-5 * std::max(1.0, std::fabs(expected)));
    }
    situ(g, u, 4.0f, 0.0f, 2, out);  // linear_beta <= 0: the up branch is u itself
    EXPECT_NEAR(out[0], 4.0 * std::tanh(0.5) / (1.0 + std::exp(-2.0)) * 10.0, 1e-5);
}

TEST(VectorOps, DecayedDotsWeighEachChannelByItsDecay) {
    // e = exp(g_i - g_j) ⊙ k over 11 channels (a full vector and a tail at every level), in double.
    std::vector<float> g_i(11), g_j(11), k(11), a(11), b(11);
    for (int c = 0; c < 11; ++c) {
        g_i[c] = -0.5f * float(c);
        g_j[c] = -0.25f * float(c);
        k[c] = 1.0f + 0.125f * float(c);
        a[c] = float(c % 3) - 1.0f;
        b[c] = 0.5f - 0.0625f * float(c);
    }
    double want_a = 0.0, want_b = 0.0;
    for (int c = 0; c < 11; ++c) {
        const double e = std::exp(double(g_i[c]) - double(g_j[c])) * k[c];
        want_a += a[c] * e;
        want_b += b[c] * e;
    }
    float dot_a = 0.0f, dot_b = 0.0f;
    decayed_dots(g_i.data(), g_j.data(), k.data(), a.data(), b.data(), 11, &dot_a, &dot_b);
    EXPECT_NEAR(dot_a, want_a, 1e-6 * 11);
    EXPECT_NEAR(dot_b, want_b, 1e-6 * 11);
}

TEST(VectorOps, SiluAndSigmoid) {
    float x[2] = {0.0f, 2.0f}, out[2];
    sigmoid(x, 2, out);
    EXPECT_FLOAT_EQ(out[0], 0.5f);
    silu(x, 2, out);
    EXPECT_NEAR(out[1], 2.0 / (1.0 + std::exp(-2.0)), 1e-6);
}

TEST(VectorOps, CausalConvUsesStateThenCarriesTheLastInputs) {
    // 2 channels, kernel 3: out[t][c] = w0 u[t-2] + w1 u[t-1] + w2 u[t]
    const float w[6] = {1, 10, 100, 2, 20, 200};
    float state[4] = {5, 6, 0, 0};  // channel 0 history (oldest first), channel 1 none
    const float u[3 * 2] = {1, 1, 2, 2, 3, 3};  // [t][c]
    float out[3 * 2];
    causal_conv(u, 2, 3, 2, w, 3, state, out, 2);
    EXPECT_FLOAT_EQ(out[0], 1 * 5 + 10 * 6 + 100 * 1);
    EXPECT_FLOAT_EQ(out[2], 1 * 6 + 10 * 1 + 100 * 2);
    EXPECT_FLOAT_EQ(out[4], 1 * 1 + 10 * 2 + 100 * 3);
    EXPECT_FLOAT_EQ(out[1], 200 * 1);
    EXPECT_FLOAT_EQ(out[5], 2 * 1 + 20 * 2 + 200 * 3);
    EXPECT_EQ(state[0], 2);  // last two inputs of channel 0
    EXPECT_EQ(state[1], 3);
}

TEST(ThreadPool, RunsEveryTaskOnceIncludingNestedCalls) {
    ThreadPool pool(4);
    std::vector<std::atomic<int>> hits(1000);
    pool.parallel_for(100, [&](int64_t i, int thread) {
        EXPECT_GE(thread, 0);
        EXPECT_LT(thread, pool.size());
        pool.parallel_for(10, [&](int64_t j, int) { hits[size_t(i * 10 + j)]++; });
    });
    for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}

// Regions back to back, as a decode step issues them: workers that wake late (or not at all
// within a short region) never run a task twice, never miss one, never run one of the next
// region, and every task's writes are visible when parallel_for returns.
TEST(ThreadPool, BackToBackRegionsRunEachTaskOnceAndCompleteBeforeReturning) {
    ThreadPool pool(3);
    std::vector<int> hits(9);
    for (int region = 0; region < 20000; ++region) {
        const int64_t n = 2 + region % 8;
        std::fill(hits.begin(), hits.end(), 0);
        pool.parallel_for(n, [&](int64_t i, int) { hits[size_t(i)] += 1 + region; });
        for (int64_t i = 0; i < int64_t(hits.size()); ++i) ASSERT_EQ(hits[size_t(i)], i < n ? 1 + region : 0) << region << " " << i;
    }
}

}  // namespace
}  // namespace k3::kernels
