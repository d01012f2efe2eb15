// The one generation loop (runtime::Scheduler through runtime::generate, as `k3 run` drives it)
// and testing::CachedSession on tiny-k3: greedy generation equals llama.cpp's continuation; a
// prompt that extends the cached one, or a cached checkpoint, or neither, leads to the
// reference logits; stop ids, a stop string and the context end generation.
// (Here rather than in tests/runtime to share fixture_cases.h.)
#include <gtest/gtest.h>

#include <algorithm>

#include "model/cached_session.h"
#include "model/fixture_cases.h"
#include "model/tiny_k3_engine_suite.h"
#include "runtime/engine.h"
#include "runtime/generation.h"
#include "runtime/scheduler.h"
#include "util/error.h"

namespace k3::runtime {
namespace {

using testing::FixtureCase;
using testing::CachedSession;
using testing::ModelFixture;

// fixtures/README.md §5: every logit within 0.03 of the reference.
constexpr float kLogitTolerance = 0.03f;

class Generation : public testing::TinyK3EngineSuite<Generation> {
protected:

    static GenerationRequest greedy(const std::vector<int32_t>& prompt, int64_t max_tokens) {
        GenerationRequest request;
        request.prompt = prompt;
        request.params.sampling.temperature = 0.0f;
        request.params.max_tokens = max_tokens;
        return request;
    }
    static GenerationResult run(Scheduler& scheduler, GenerationRequest request,
                                const std::function<bool(const SampledToken&)>& on_token = [](const SampledToken&) { return true; }) {
        return generate(scheduler, std::move(request), on_token);
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
    Scheduler scheduler(*engine_, {});
    for (const FixtureCase& c : fixture_->cases) {
        const GenerationResult result = run(scheduler, greedy(c.prompt, 32));
        EXPECT_EQ(result.tokens, c.generated) << c.name;
        EXPECT_EQ(result.summary.outcome, JobOutcome::finished);
        EXPECT_EQ(result.summary.finish, FinishReason::length);
        EXPECT_EQ(result.summary.n_prompt, int64_t(c.prompt.size()));
        EXPECT_EQ(result.summary.n_generated, 32);
        // The last sampled token is not fed: nothing follows it.
        EXPECT_EQ(scheduler.slots()[0].n_tokens, int64_t(c.prompt.size() + 31));
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

TEST_F(Generation, StopIdStopStringAndContextEndGeneration) {
    const FixtureCase& c = fixture_->cases[2];
    const size_t n = c.prompt.size();
    Scheduler scheduler(*engine_, {});

    // A stop id ends generation at its first occurrence; it is not delivered.
    const size_t stop_at = 5;
    const int32_t stop_id = c.generated[stop_at];
    const size_t first = size_t(std::find(c.generated.begin(), c.generated.end(), stop_id) - c.generated.begin());
    GenerationRequest request = greedy(c.prompt, 32);
    request.params.stop_ids = {stop_id};
    GenerationResult result = run(scheduler, request);
    EXPECT_EQ(result.summary.finish, FinishReason::stop_id);
    EXPECT_EQ(finish_reason_name(result.summary.finish), "stop");
    EXPECT_EQ(result.tokens, std::vector<int32_t>(c.generated.begin(), c.generated.begin() + std::ptrdiff_t(first)));

    // The sink ends the answer after the token that completes a stop string.
    int seen = 0;
    result = run(scheduler, greedy(c.prompt, 32), [&](const SampledToken&) { return ++seen < 4; });
    EXPECT_EQ(result.summary.finish, FinishReason::stop_string);
    EXPECT_EQ(finish_reason_name(result.summary.finish), "stop");
    EXPECT_EQ(result.tokens, std::vector<int32_t>(c.generated.begin(), c.generated.begin() + 4));

    // A context of n + 3 tokens leaves room for 3.
    Scheduler small(*engine_, {.ctx_size = int64_t(n) + 3});
    result = run(small, greedy(c.prompt, -1));
    EXPECT_EQ(result.summary.finish, FinishReason::context);
    EXPECT_EQ(finish_reason_name(result.summary.finish), "length");
    EXPECT_EQ(result.tokens, std::vector<int32_t>(c.generated.begin(), c.generated.begin() + 3));

    Scheduler full(*engine_, {.ctx_size = int64_t(n)});
    EXPECT_THROW(run(full, greedy(c.prompt, 1)), Error);
    EXPECT_THROW(run(scheduler, greedy({}, 1)), Error);
}

}  // namespace
}  // namespace k3::runtime
