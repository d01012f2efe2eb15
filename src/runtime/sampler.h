// Picks the next token from a row of logits, in llama.cpp's default order: grammar mask,
// logit bias, repetition penalties, top-k, top-p, min-p, temperature, then a draw reproducible
// from a seed (or greedy). Reports the sampled token's log-probability and the most likely
// alternatives when asked.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_constraint.h"

namespace k3::runtime {

struct SamplerParams {
    float temperature = 1.0f;  // <= 0: greedy
    int32_t top_k = 0;         // <= 0: no limit
    float top_p = 1.0f;        // >= 1: no limit
    float min_p = 0.0f;        // <= 0: no limit
    uint64_t seed = 0;
    // Penalties on tokens generated so far (the last repeat_last_n; -1: all, 0: none), as
    // llama.cpp applies them: a seen token's logit is divided by repeat_penalty (multiplied
    // when negative), then lowered by frequency_penalty per occurrence and presence_penalty once.
    float repeat_penalty = 1.0f;
    int32_t repeat_last_n = 64;
    float frequency_penalty = 0.0f;
    float presence_penalty = 0.0f;
    std::vector<std::pair<int32_t, float>> logit_bias{};  // added to the logit; -inf forbids
    // Constrained decoding: only tokens that continue `grammar` over `vocabulary` (both set or
    // neither).
    std::shared_ptr<const grammar::Grammar> grammar{};
    std::shared_ptr<const grammar::TokenVocabulary> vocabulary{};
    bool logprobs = false;     // report SampledToken::logprob
    int32_t top_logprobs = 0;  // and this many most likely alternatives
};

// What a generation samples with unless told otherwise, the same for `k3 run`, `k3 chat` and
// every endpoint of `k3 serve` (llama.cpp's defaults); their --temp, --top-p, --top-k, --min-p
// and --seed change it, a request's own fields override it.
struct SamplingDefaults {
    float temperature = 0.8f;
    float top_p = 0.95f;
    int32_t top_k = 40;
    float min_p = 0.05f;
    int64_t seed = -1;  // -1: a fresh random seed for each generation (llama.cpp's meaning)
};
// The defaults as sampler parameters, with -1 resolved to a random seed.
SamplerParams default_sampling(const SamplingDefaults& defaults);
// Inline, so that request parsing (and its fuzzer) uses it without the sampler.
inline uint64_t random_seed() {
    std::random_device device;
    return (uint64_t(device()) << 32) ^ device();
}

struct TokenLogprob {
    int32_t id = 0;
    float logprob = 0.0f;
};

struct SampledToken {
    int32_t id = 0;
    // With SamplerParams::logprobs: log-softmax of the model's logits (before the filters and
    // penalties, as llama-server reports them), and the top_logprobs best by it.
    std::optional<float> logprob;
    std::vector<TokenLogprob> top;
};

// Index of the largest logit; the lowest id wins ties.
int32_t argmax(std::span<const float> logits);

class Sampler {
public:
    // Throws k3::Error for a logit_bias id that is negative.
    explicit Sampler(const SamplerParams& params);
    // Samples and takes the token as generated (the grammar advances, the penalties see it).
    // Throws k3::Error when every token has been ruled out.
    SampledToken sample_token(std::span<const float> logits);
    int32_t sample(std::span<const float> logits) { return sample_token(logits).id; }

private:
    void apply_penalties(std::vector<float>& logits) const;
    int32_t draw(const std::vector<float>& logits);
    void record(int32_t token);

    SamplerParams params_;
    std::mt19937_64 rng_;
    std::optional<grammar::TokenConstraint> constraint_;
    std::vector<int32_t> history_;                   // generated tokens, the last repeat_last_n
    std::unordered_map<int32_t, int32_t> counts_;    // occurrences in history_
};

}  // namespace k3::runtime
