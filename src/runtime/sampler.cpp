#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "util/error.h"

namespace k3::runtime {

int32_t argmax(std::span<const float> logits) {
    if (logits.empty()) throw Error("argmax of an empty logit row");
    // max_element returns the first of equal maxima: the lowest id.
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}

int32_t Sampler::sample(std::span<const float> logits) {
    if (params_.temperature <= 0.0f) return argmax(logits);
    // Candidates sorted by logit (descending; lower id first on ties).
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    auto better = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b); };
    size_t keep = ids.size();
    if (params_.top_k > 0) keep = std::min(keep, size_t(params_.top_k));
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(keep), ids.end(), better);
    ids.resize(keep);
    // p_i = softmax(logit_i / temperature) over the kept candidates
    std::vector<double> probs(keep);
    const double top = logits[size_t(ids[0])];
    double sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += probs[i] = std::exp((logits[size_t(ids[i])] - top) / params_.temperature);
    for (double& p : probs) p /= sum;
    // min-p: drop candidates below min_p * p_max
    if (params_.min_p > 0.0f) {
        size_t n = 1;
        while (n < keep && probs[n] >= params_.min_p * probs[0]) ++n;
        keep = n;
    }
    // top-p: the smallest prefix whose mass reaches top_p
    if (params_.top_p < 1.0f) {
        double mass = 0.0;
        size_t n = 0;
        while (n < keep && mass < params_.top_p) mass += probs[n++];
        keep = std::max<size_t>(n, 1);
    }
    const double total = std::accumulate(probs.begin(), probs.begin() + std::ptrdiff_t(keep), 0.0);
    double draw = std::uniform_real_distribution<double>(0.0, total)(rng_);
    for (size_t i = 0; i < keep; ++i) {
        draw -= probs[i];
        if (draw < 0.0) return ids[i];
    }
    return ids[keep - 1];
}

}  // namespace k3::runtime
