// Picks the next token from a row of logits: greedy, or temperature with top-k, top-p and
// min-p filtering, reproducible from a seed.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace k3::runtime {

struct SamplerParams {
    float temperature = 1.0f;  // <= 0: greedy
    int32_t top_k = 0;         // <= 0: no limit
    float top_p = 1.0f;        // >= 1: no limit
    float min_p = 0.0f;        // <= 0: no limit
    uint64_t seed = 0;
};

// Index of the largest logit; the lowest id wins ties.
int32_t argmax(std::span<const float> logits);

class Sampler {
public:
    explicit Sampler(const SamplerParams& params);
    int32_t sample(std::span<const float> logits);

private:
    SamplerParams params_;
    std::mt19937_64 rng_;
};

}  // namespace k3::runtime
