#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/engine.h"
#include "runtime/prefix_cache.h"
#include "runtime/session.h"

namespace k3::testing {

// One session fed synchronously through the prompt cache, for the tests that need logits, not a
// generated answer (the scheduler delivers tokens): it resumes as the scheduler does
// (runtime::resume_from_cache) and stores each checkpoint by feeding up to it.
class CachedSession {
public:
    // cache: shared with others; null: a private one with default options.
    explicit CachedSession(const runtime::Engine& engine, runtime::PrefixCache* cache = nullptr);
    ~CachedSession();

    // Feeds what `prompt` adds to the longest cached prefix and returns the logits after its last token;
    // *reused (optional) receives how many prompt tokens were not fed again. `boundaries`: as for
    // resume_from_cache. Throws k3::Error for an empty prompt.
    std::vector<float> prefill(std::span<const int32_t> prompt, int64_t* reused = nullptr,
                               std::span<const int64_t> boundaries = {});
    // Feeds one more token (a sampled one) and returns the logits after it.
    std::vector<float> feed(int32_t token);

    const std::vector<int32_t>& consumed() const { return session_->tokens(); }
    runtime::Session& session() { return *session_; }

private:
    std::unique_ptr<runtime::Session> session_;
    std::unique_ptr<runtime::PrefixCache> own_cache_;
    runtime::PrefixCache* cache_;
};

}  // namespace k3::testing
