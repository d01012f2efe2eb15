#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "util/error.h"

namespace k3::runtime {

SamplerParams default_sampling(const SamplingDefaults& defaults) {
    SamplerParams params;
    params.temperature = defaults.temperature;
    params.top_p = defaults.top_p;
    params.top_k = defaults.top_k;
    params.min_p = defaults.min_p;
    params.seed = defaults.seed == -1 ? random_seed() : uint64_t(defaults.seed);
    return params;
}

int32_t argmax(std::span<const float> logits) {
    if (logits.empty()) throw Error("argmax of an empty logit row");
    // max_element returns the first of equal maxima: the lowest id.
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
    if (bool(params_.grammar) != bool(params_.vocabulary)) throw Error("sampler: a grammar needs its vocabulary");
    if (params_.grammar) constraint_.emplace(params_.grammar, params_.vocabulary);
    for (const auto& [id, bias] : params_.logit_bias)
        if (id < 0) throw Error("sampler: logit_bias for a negative token id " + std::to_string(id));
}

void Sampler::apply_penalties(std::vector<float>& logits) const {
    if (counts_.empty() ||
        (params_.repeat_penalty == 1.0f && params_.frequency_penalty == 0.0f && params_.presence_penalty == 0.0f))
        return;
    for (const auto& [id, count] : counts_) {
        float& logit = logits[size_t(id)];
        logit = logit <= 0.0f ? logit * params_.repeat_penalty : logit / params_.repeat_penalty;
        logit -= float(count) * params_.frequency_penalty + params_.presence_penalty;
    }
}

void Sampler::record(int32_t token) {
    if (params_.repeat_last_n == 0) return;
    history_.push_back(token);
    ++counts_[token];
    if (params_.repeat_last_n > 0 && history_.size() > size_t(params_.repeat_last_n)) {
        const int32_t oldest = history_.front();
        history_.erase(history_.begin());
        if (--counts_[oldest] == 0) counts_.erase(oldest);
    }
}

int32_t Sampler::draw(const std::vector<float>& logits) {
    constexpr float kNever = -std::numeric_limits<float>::infinity();
    if (params_.temperature <= 0.0f) {
        const int32_t best = argmax(logits);
        if (logits[size_t(best)] == kNever) throw Error("sampler: every token has been ruled out");
        return best;
    }
    // Candidates still possible, sorted by logit (descending; lower id first on ties).
    std::vector<int32_t> ids;
    ids.reserve(logits.size());
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] != kNever) ids.push_back(int32_t(i));
    if (ids.empty()) throw Error("sampler: every token has been ruled out");
    auto better = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b); };
    size_t keep = ids.size();
    if (params_.top_k > 0) keep = std::min(keep, size_t(params_.top_k));
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(keep), ids.end(), better);
    ids.resize(keep);
    // top-p and min-p judge the untempered distribution softmax(logit) over the kept candidates;
    // temperature shapes only the final draw (llama.cpp's order).
    const double top = logits[size_t(ids[0])];
    std::vector<double> probs(keep);
    double sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += probs[i] = std::exp(logits[size_t(ids[i])] - top);
    for (double& p : probs) p /= sum;
    if (params_.top_p < 1.0f) {  // the smallest prefix whose mass reaches top_p
        double mass = 0.0;
        size_t n = 0;
        while (n < keep && mass < params_.top_p) mass += probs[n++];
        keep = std::max<size_t>(n, 1);
    }
    if (params_.min_p > 0.0f) {  // drop candidates below min_p * p_max
        size_t n = 1;
        while (n < keep && probs[n] >= params_.min_p * probs[0]) ++n;
        keep = n;
    }
    std::vector<double> weights(keep);
    for (size_t i = 0; i < keep; ++i) weights[i] = std::exp((logits[size_t(ids[i])] - top) / params_.temperature);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    double point = std::uniform_real_distribution<double>(0.0, total)(rng_);
    for (size_t i = 0; i < keep; ++i) {
        point -= weights[i];
        if (point < 0.0) return ids[i];
    }
    return ids[keep - 1];
}

SampledToken Sampler::sample_token(std::span<const float> logits) {
    std::vector<float> work(logits.begin(), logits.end());
    if (constraint_) constraint_->mask(work);
    for (const auto& [id, bias] : params_.logit_bias)
        if (size_t(id) < work.size()) work[size_t(id)] += bias;
    apply_penalties(work);

    SampledToken result;
    result.id = draw(work);
    if (constraint_) constraint_->accept(result.id);
    record(result.id);

    if (params_.logprobs) {
        const float top = *std::max_element(logits.begin(), logits.end());
        double sum = 0.0;
        for (float l : logits) sum += std::exp(double(l) - top);
        const double log_sum = std::log(sum) + top;
        auto logprob = [&](int32_t id) { return float(double(logits[size_t(id)]) - log_sum); };
        result.logprob = logprob(result.id);
        const size_t n = std::min(logits.size(), size_t(std::max(params_.top_logprobs, 0)));
        if (n == 0) return result;
        std::vector<int32_t> ids(logits.size());
        std::iota(ids.begin(), ids.end(), 0);
        std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(n), ids.end(), [&](int32_t a, int32_t b) {
            return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
        });
        for (size_t i = 0; i < n; ++i) result.top.push_back({ids[i], logprob(ids[i])});
    }
    return result;
}

}  // namespace k3::runtime
