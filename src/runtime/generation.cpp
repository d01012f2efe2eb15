#include "runtime/generation.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "runtime/engine.h"
#include "util/error.h"

namespace k3::runtime {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

CachedSession::CachedSession(const Engine& engine, PrefixCache* cache)
    : session_(engine.new_session()),
      own_cache_(cache ? nullptr : std::make_unique<PrefixCache>(engine, PrefixCacheOptions{})),
      cache_(cache ? cache : own_cache_.get()) {}

CachedSession::~CachedSession() = default;

std::vector<float> CachedSession::prefill(std::span<const int32_t> prompt, int64_t* reused,
                                          std::span<const int64_t> boundaries) {
    if (prompt.empty()) throw Error("the prompt has no tokens");
    // Only states a prefill stored at KDA chunk boundaries are resumed from, never the session's
    // own state after sampled tokens: those went through the recurrent form one by one, the cold
    // prompt goes through the chunked form, and the two round differently.
    int64_t shared = 0;
    if (const SessionSnapshot cached = cache_->lookup(prompt, &shared)) session_->restore(cached);
    else session_->reset();
    std::vector<int64_t> stops(boundaries.begin(), boundaries.end());
    stops.push_back(shared);
    const int64_t start = session_->position();
    if (reused) *reused = start;
    for (int64_t stop : cache_->checkpoint_positions(start, int64_t(prompt.size()), stops)) {
        session_->eval(prompt.subspan(size_t(session_->position()), size_t(stop - session_->position())));
        cache_->insert(session_->snapshot());
    }
    return session_->eval(prompt.subspan(size_t(session_->position())));
}

std::vector<float> CachedSession::feed(int32_t token) { return session_->eval(std::span(&token, 1)); }

void CachedSession::reset() { session_->reset(); }

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::stop_id: return "stop";
        case FinishReason::length: return "length";
        case FinishReason::context: return "context";
        case FinishReason::caller: return "caller";
    }
    return "unknown";
}

double GenerationStats::prompt_tokens_per_second() const {
    return prompt_seconds > 0 ? double(prompt_tokens) / prompt_seconds : 0.0;
}

double GenerationStats::generated_tokens_per_second() const {
    return generation_seconds > 0 ? double(generated_tokens) / generation_seconds : 0.0;
}

GenerationResult generate(CachedSession& session, std::span<const int32_t> prompt,
                          const GenerationParams& params, const TokenCallback& on_token,
                          std::span<const int64_t> boundaries) {
    const int64_t n_ctx = params.n_ctx > 0 ? params.n_ctx : session.session().engine().n_ctx_train();
    if (int64_t(prompt.size()) >= n_ctx)
        throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens; the context holds " +
                    std::to_string(n_ctx));

    GenerationResult result;
    GenerationStats& stats = result.stats;
    const auto prefill_start = std::chrono::steady_clock::now();
    std::vector<float> logits = session.prefill(prompt, &stats.reused_tokens, boundaries);
    stats.prompt_seconds = seconds_since(prefill_start);
    stats.prompt_tokens = int64_t(prompt.size()) - stats.reused_tokens;

    Sampler sampler(params.sampling);
    const auto generation_start = std::chrono::steady_clock::now();
    const auto budget_left = [&] {
        return params.max_tokens < 0 || int64_t(result.tokens.size()) < params.max_tokens;
    };
    // A sampled token takes position consumed().size(), which must lie inside the context.
    const auto context_left = [&] { return int64_t(session.consumed().size()) < n_ctx; };
    result.finish = FinishReason::length;
    while (budget_left()) {
        if (!context_left()) {
            result.finish = FinishReason::context;
            break;
        }
        const int32_t token = sampler.sample(logits);
        result.tokens.push_back(token);
        const bool keep_going = on_token(token);
        if (std::find(params.stop_ids.begin(), params.stop_ids.end(), token) != params.stop_ids.end()) {
            result.finish = FinishReason::stop_id;
            break;
        }
        if (!keep_going) {
            result.finish = FinishReason::caller;
            break;
        }
        if (!budget_left()) break;  // no need to feed a token nothing will follow
        logits = session.feed(token);
    }
    stats.generated_tokens = int64_t(result.tokens.size());
    stats.generation_seconds = seconds_since(generation_start);
    return result;
}

}  // namespace k3::runtime
