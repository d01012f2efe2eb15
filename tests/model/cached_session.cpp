#include "model/cached_session.h"

#include "runtime/generation.h"
#include "util/error.h"

namespace k3::testing {

CachedSession::CachedSession(const runtime::Engine& engine, runtime::PrefixCache* cache)
    : session_(engine.new_session()),
      own_cache_(cache ? nullptr : std::make_unique<runtime::PrefixCache>(engine, runtime::PrefixCacheOptions{})),
      cache_(cache ? cache : own_cache_.get()) {}

CachedSession::~CachedSession() = default;

std::vector<float> CachedSession::prefill(std::span<const int32_t> prompt, int64_t* reused,
                                          std::span<const int64_t> boundaries) {
    if (prompt.empty()) throw Error("the prompt has no tokens");
    const std::vector<int64_t> checkpoints = runtime::resume_from_cache(*cache_, *session_, prompt, boundaries);
    if (reused) *reused = session_->position();
    for (int64_t stop : checkpoints) {
        session_->eval(prompt.subspan(size_t(session_->position()), size_t(stop - session_->position())));
        cache_->insert(session_->snapshot());
    }
    return session_->eval(prompt.subspan(size_t(session_->position())));
}

std::vector<float> CachedSession::feed(int32_t token) { return session_->eval(std::span(&token, 1)); }

}  // namespace k3::testing
