// runtime::generate and runtime::CachedSession on tiny-k3: greedy generation equals llama.cpp's
// continuation; a prompt that extends the cached one, or a cached checkpoint, or neither,
// leads to the reference logits; stop ids, the caller and the context end generation.
// (Here rather than in tests/runtime to share fixture_cases.h.)
#include <gtest/gtest.h>

#include <algorithm>

#include "model/fixture_cases.h"
#include "model/tiny_k3_engine_suite.h"
#include "runtime/engine.h"
#include "runtime/generation.h"
#include "util/error.h"

namespace k3::runtime {
namespace {

using testing::FixtureCase;
using testing::ModelFixture;

// fixtures/README.md §5: every logit within 0.03 of the reference.
constexpr float kLogitTolerance = 0.03f;

class Generation : public testing::TinyK3EngineSuite<Generation> {
protected:

    static GenerationParams greedy(int64_t max_tokens) {
        GenerationParams params;
        params.sampling.temperature = 0.0f;
        params.max_tokens = max_tokens;
        return params;
    }
    // The case's first `n` tokens (prompt, then the reference continuation).
    static std::vector<int32_t> head(const FixtureCase& c, size_t n) {
        return {c.tokens.begin(), c.tokens.begin() + std::ptrdiff_t(n)};
    }
    // Logits after tokens[0..n) equal reference row n - 1.
    static void expect_reference_row(const FixtureCase& c, const std::vector<float>& logits, size_t n) {
        ASSERT_EQ(int64_t(logits.size()), fixture_->n_vocab);
        EXPECT_LE(testing::max_abs_diff(logits.data(), fixture_->reference_row(c, int64_t(n) - 1), fixture_->n_vocab),
                  kLogitTolerance)
            << c.name << " row " << n - 1;
    }

};


TEST_F(Generation, GreedyEqualsReferenceContinuationForEveryCase) {
    for (const FixtureCase& c : fixture_->cases) {
        CachedSession session(*engine_);
        const GenerationResult result = generate(session, c.prompt, greedy(32), [](int32_t) { return true; });
        EXPECT_EQ(result.tokens, c.generated) << c.name;
        EXPECT_EQ(result.finish, FinishReason::length);
        EXPECT_EQ(result.stats.prompt_tokens, int64_t(c.prompt.size()));
        EXPECT_EQ(result.stats.generated_tokens, 32);
        // The last sampled token is not fed: nothing follows it.
        EXPECT_EQ(session.consumed(), head(c, c.prompt.size() + 31));
    }
}

TEST_F(Generation, PrefillResumesFromTheLongestCachedCheckpointOrStartsOver) {
    const FixtureCase& medium = fixture_->cases[1];
    const FixtureCase& shorter = fixture_->cases[0];
    const size_t n = medium.prompt.size();
    CachedSession session(*engine_);
    int64_t reused = -1;

    expect_reference_row(medium, session.prefill(head(medium, n), &reused), n);
    EXPECT_EQ(reused, 0);

    // Extends what was consumed: resumes from the checkpoint stored at the last KDA chunk
    // boundary before the previous prompt's end (32 of 40 tokens).
    expect_reference_row(medium, session.prefill(head(medium, n + 10), &reused), n + 10);
    EXPECT_EQ(reused, 32);

    // Diverges after the last prompt: back to its last checkpoint (48 of 50 tokens).
    session.feed(7);
    session.feed(8);
    expect_reference_row(medium, session.prefill(head(medium, n + 14), &reused), n + 14);
    EXPECT_EQ(reused, 48);

    // Neither: start over.
    expect_reference_row(shorter, session.prefill(shorter.prompt, &reused), shorter.prompt.size());
    EXPECT_EQ(reused, 0);

    // The same prompt again: its last token must be fed again for its logits.
    expect_reference_row(shorter, session.prefill(shorter.prompt, &reused), shorter.prompt.size());
    EXPECT_EQ(reused, 0);
}

TEST_F(Generation, StopIdCallerAndContextEndGeneration) {
    const FixtureCase& c = fixture_->cases[2];
    const size_t n = c.prompt.size();

    // A stop id ends generation at its first occurrence and is returned.
    const size_t stop_at = 5;
    const int32_t stop_id = c.generated[stop_at];
    const size_t first = size_t(std::find(c.generated.begin(), c.generated.end(), stop_id) - c.generated.begin());
    GenerationParams params = greedy(32);
    params.stop_ids = {stop_id};
    CachedSession session(*engine_);
    GenerationResult result = generate(session, c.prompt, params, [](int32_t) { return true; });
    EXPECT_EQ(result.finish, FinishReason::stop_id);
    EXPECT_EQ(result.tokens, std::vector<int32_t>(c.generated.begin(), c.generated.begin() + std::ptrdiff_t(first + 1)));

    // The caller stops after the token it refuses.
    int seen = 0;
    result = generate(session, c.prompt, greedy(32), [&](int32_t) { return ++seen < 4; });
    EXPECT_EQ(result.finish, FinishReason::caller);
    EXPECT_EQ(result.tokens, std::vector<int32_t>(c.generated.begin(), c.generated.begin() + 4));

    // A context of n + 3 tokens leaves room for 3.
    params = greedy(-1);
    params.n_ctx = int64_t(n) + 3;
    result = generate(session, c.prompt, params, [](int32_t) { return true; });
    EXPECT_EQ(result.finish, FinishReason::context);
    EXPECT_EQ(result.tokens, std::vector<int32_t>(c.generated.begin(), c.generated.begin() + 3));

    params.n_ctx = int64_t(n);
    EXPECT_THROW(generate(session, c.prompt, params, [](int32_t) { return true; }), Error);
    EXPECT_THROW(generate(session, std::vector<int32_t>{}, greedy(1), [](int32_t) { return true; }), Error);
}

}  // namespace
}  // namespace k3::runtime
