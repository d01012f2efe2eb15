// The sampler's filters against hand-made logit rows whose outcome is known.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "grammar/gbnf_parser.h"
#include "runtime/sampler.h"
#include "util/error.h"

namespace k3::runtime {
namespace {

TEST(Sampler, ArgmaxTakesTheLowestIdOnTies) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
    EXPECT_EQ(argmax(logits), 1);
}

TEST(Sampler, ZeroTemperatureIsGreedy) {
    Sampler s({.temperature = 0.0f, .seed = 7});
    EXPECT_EQ(s.sample(std::vector<float>{0.5f, 0.1f, 0.9f}), 2);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
    Sampler s({.temperature = 5.0f, .top_k = 1, .seed = 7});
    for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(std::vector<float>{0.5f, 0.1f, 0.9f, 0.8f}), 2);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
    // Probabilities 0.5, 0.3, 0.2 (logits are their logs): top_p 0.7 keeps ids 0 and 1.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    Sampler s({.top_p = 0.7f, .seed = 11});
    std::set<int32_t> seen;
    for (int i = 0; i < 300; ++i) seen.insert(s.sample(logits));
    EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
    // Probabilities 0.6, 0.3, 0.1: min_p 0.25 keeps tokens with p >= 0.15, ids 0 and 1.
    const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    Sampler s({.min_p = 0.25f, .seed = 3});
    std::set<int32_t> seen;
    for (int i = 0; i < 300; ++i) seen.insert(s.sample(logits));
    EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
}

TEST(Sampler, SameSeedSameSequence) {
    const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
    Sampler a({.seed = 99}), b({.seed = 99});
    for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(logits), b.sample(logits));
}

TEST(Sampler, LogitBiasCanForceOrForbid) {
    const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
    Sampler forced({.temperature = 0.0f, .logit_bias = {{2, 2.5f}}});  // 0 + 2.5 > 2
    EXPECT_EQ(forced.sample(logits), 2);
    Sampler banned({.temperature = 0.0f, .logit_bias = {{0, -INFINITY}}});
    EXPECT_EQ(banned.sample(logits), 1);
    Sampler all({.temperature = 1.0f, .logit_bias = {{0, -INFINITY}, {1, -INFINITY}, {2, -INFINITY}}});
    EXPECT_THROW(all.sample(logits), Error);
}

TEST(Sampler, PenaltiesFollowLlamaCppsFormula) {
    // Greedy over fixed logits {3, 2.5, -1}: token 0 first. Then token 0 is penalised:
    // repeat 2: 3 / 2 = 1.5; frequency 0.25 per use and presence 0.5: 1.5 - 0.25 - 0.5 = 0.75,
    // below token 1's 2.5, so token 1 comes next; then 2.5/2 - 0.75 = 0.5 against token 0's
    // 0.75: token 0 again; then token 0's two uses: 1.5 - 0.5 - 0.5 = 0.5, token 1's 0.5: a tie,
    // the lower id (0) wins.
    const std::vector<float> logits = {3.0f, 2.5f, -1.0f};
    Sampler s({.temperature = 0.0f, .repeat_penalty = 2.0f, .frequency_penalty = 0.25f, .presence_penalty = 0.5f});
    EXPECT_EQ(s.sample(logits), 0);
    EXPECT_EQ(s.sample(logits), 1);
    EXPECT_EQ(s.sample(logits), 0);
    EXPECT_EQ(s.sample(logits), 0);
    // A negative logit is multiplied: -1 * 2 = -2 (and falls further behind).
    const std::vector<float> negative = {-1.0f, -1.5f};
    Sampler n({.temperature = 0.0f, .repeat_penalty = 2.0f});
    EXPECT_EQ(n.sample(negative), 0);
    EXPECT_EQ(n.sample(negative), 1);  // -2 < -1.5
}

TEST(Sampler, RepeatWindowForgetsOldTokens) {
    // Token 0 is penalised out of first place only while it is inside the last 1 token.
    const std::vector<float> logits = {2.0f, 1.5f};
    Sampler s({.temperature = 0.0f, .repeat_penalty = 2.0f, .repeat_last_n = 1});
    EXPECT_EQ(s.sample(logits), 0);
    EXPECT_EQ(s.sample(logits), 1);  // 2/2 = 1 < 1.5
    EXPECT_EQ(s.sample(logits), 0);  // 0 left the window; 1 is penalised
}

TEST(Sampler, LogprobsAreTheModelsLogSoftmax) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f};
    double sum = 0;
    for (float l : logits) sum += std::exp(double(l));
    Sampler s({.temperature = 0.0f, .logit_bias = {{0, 10.0f}}, .logprobs = true, .top_logprobs = 2});
    const SampledToken t = s.sample_token(logits);
    EXPECT_EQ(t.id, 0);  // chosen by the bias, reported by the model's own distribution
    ASSERT_TRUE(t.logprob);
    EXPECT_NEAR(*t.logprob, 1.0 - std::log(sum), 1e-6);
    ASSERT_EQ(t.top.size(), 2u);
    EXPECT_EQ(t.top[0].id, 1);
    EXPECT_NEAR(t.top[0].logprob, 3.0 - std::log(sum), 1e-6);
    EXPECT_EQ(t.top[1].id, 2);
    EXPECT_NEAR(t.top[1].logprob, 2.0 - std::log(sum), 1e-6);
}

TEST(Sampler, GrammarAllowsOnlyTokensThatContinueIt) {
    // Vocabulary: "a", "b", "ab", "c", and an end token (id 4, empty bytes).
    auto vocabulary = std::make_shared<const grammar::TokenVocabulary>(
        std::vector<std::string>{"a", "b", "ab", "c", ""}, std::vector<int32_t>{4});
    const auto g = grammar::parse_gbnf(R"(root ::= "a" "b"+)");
    // The model prefers c, then the end token, then "a": the grammar decides.
    const std::vector<float> logits = {1.0f, 0.0f, 0.5f, 5.0f, 4.0f};
    const std::vector<std::string> pieces = {"a", "b", "ab", "c"};
    for (uint64_t seed = 0; seed < 20; ++seed) {
        Sampler s({.seed = seed, .grammar = g, .vocabulary = vocabulary});
        std::string text;
        bool ended = false;
        for (int i = 0; i < 6 && !ended; ++i) {
            const int32_t id = s.sample(logits);
            if (id == 4) ended = true;
            else text += pieces[size_t(id)];
        }
        // What came out is a prefix of a b+ (and all of it when the end token came).
        EXPECT_EQ(text[0], 'a') << text;
        EXPECT_EQ(text.find_first_not_of('b', 1), std::string::npos) << text;
        if (ended) {
            EXPECT_GE(text.size(), 2u) << text;
        }
    }
    // Greedy: "a" (1.0) first; then only b-tokens may follow ("b"); then the end token (4.0)
    // beats another "b" (0.0).
    Sampler greedy({.temperature = 0.0f, .grammar = g, .vocabulary = vocabulary});
    EXPECT_EQ(greedy.sample(logits), 0);
    EXPECT_EQ(greedy.sample(logits), 1);
    EXPECT_EQ(greedy.sample(logits), 4);
}

}  // namespace
}  // namespace k3::runtime
