// The sampler's filters against hand-made logit rows whose outcome is known.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "runtime/sampler.h"

namespace k3::runtime {
namespace {

TEST(Sampler, ArgmaxTakesTheLowestIdOnTies) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
    EXPECT_EQ(argmax(logits), 1);
}

TEST(Sampler, ZeroTemperatureIsGreedy) {
    Sampler s({0.0f, 0, 1.0f, 0.0f, 7});
    EXPECT_EQ(s.sample(std::vector<float>{0.5f, 0.1f, 0.9f}), 2);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
    Sampler s({5.0f, 1, 1.0f, 0.0f, 7});
    for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(std::vector<float>{0.5f, 0.1f, 0.9f, 0.8f}), 2);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
    // Probabilities 0.5, 0.3, 0.2 (logits are their logs): top_p 0.7 keeps ids 0 and 1.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    Sampler s({1.0f, 0, 0.7f, 0.0f, 11});
    std::set<int32_t> seen;
    for (int i = 0; i < 300; ++i) seen.insert(s.sample(logits));
    EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
    // Probabilities 0.6, 0.3, 0.1: min_p 0.25 keeps tokens with p >= 0.15, ids 0 and 1.
    const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    Sampler s({1.0f, 0, 1.0f, 0.25f, 3});
    std::set<int32_t> seen;
    for (int i = 0; i < 300; ++i) seen.insert(s.sample(logits));
    EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
}

TEST(Sampler, SameSeedSameSequence) {
    const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
    Sampler a({1.0f, 0, 1.0f, 0.0f, 99}), b({1.0f, 0, 1.0f, 0.0f, 99});
    for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(logits), b.sample(logits));
}

}  // namespace
}  // namespace k3::runtime
