#include "runtime/generation.h"

#include "runtime/engine.h"
#include "util/error.h"

namespace k3::runtime {

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::stop_id:
        case FinishReason::stop_string: return "stop";
        case FinishReason::length:
        case FinishReason::context: return "length";
    }
    return "unknown";
}

std::vector<int64_t> resume_from_cache(PrefixCache& cache, Session& session, std::span<const int32_t> prompt,
                                       std::span<const int64_t> boundaries) {
    // Only states a prefill stored at KDA chunk boundaries are resumed from, never a session's
    // own state after sampled tokens: those went through the recurrent form one by one, the cold
    // prompt goes through the chunked form, and the two round differently.
    int64_t shared = 0;
    if (const SessionSnapshot cached = cache.lookup(prompt, &shared)) session.restore(cached);
    else session.reset();
    std::vector<int64_t> stops(boundaries.begin(), boundaries.end());
    stops.push_back(shared);
    return cache.checkpoint_positions(session.position(), int64_t(prompt.size()), stops);
}

CachedSession::CachedSession(const Engine& engine, PrefixCache* cache)
    : session_(engine.new_session()),
      own_cache_(cache ? nullptr : std::make_unique<PrefixCache>(engine, PrefixCacheOptions{})),
      cache_(cache ? cache : own_cache_.get()) {}

CachedSession::~CachedSession() = default;

std::vector<float> CachedSession::prefill(std::span<const int32_t> prompt, int64_t* reused,
                                          std::span<const int64_t> boundaries) {
    if (prompt.empty()) throw Error("the prompt has no tokens");
    const std::vector<int64_t> checkpoints = resume_from_cache(*cache_, *session_, prompt, boundaries);
    if (reused) *reused = session_->position();
    for (int64_t stop : checkpoints) {
        session_->eval(prompt.subspan(size_t(session_->position()), size_t(stop - session_->position())));
        cache_->insert(session_->snapshot());
    }
    return session_->eval(prompt.subspan(size_t(session_->position())));
}

std::vector<float> CachedSession::feed(int32_t token) { return session_->eval(std::span(&token, 1)); }

}  // namespace k3::runtime
