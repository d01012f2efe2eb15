// The generation loop shared by `k3 run`, `k3 chat` and the HTTP server: bring a session to the
// end of a prompt (reusing the longest prefix it or the prompt cache already computed),
// then sample token by token until a stop id, the token budget, the context length, or the
// caller says stop. Text-level concerns (detokenizing, stop strings, reasoning) belong to the
// caller's token callback; see text/stop_strings.h.
//
//   runtime::CachedSession cached(*engine);
//   auto result = runtime::generate(cached, prompt_ids, params, [&](int32_t id) {
//       std::fputs(detok.push(id).c_str(), stdout);
//       return true;  // keep going
//   });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/prefix_cache.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace k3::runtime {

class Engine;

// A session that resumes each prompt from the longest prefix the prompt cache holds
// (prefix_cache.h). A prefill pauses at the cache's checkpoint positions to store states there,
// so a chat's next turn, an edited last message or another conversation with the same system
// prompt starts from one, and computes what the cold prompt would (the same KDA chunks).
class CachedSession {
public:
    // cache: shared with others (e.g. the server's slots); null: a private one with default options.
    explicit CachedSession(const Engine& engine, PrefixCache* cache = nullptr);
    ~CachedSession();

    // Feeds what `prompt` adds to the longest cached prefix and returns the logits after its last token;
    // *reused (optional) receives how many prompt tokens were not fed again. `boundaries`: token
    // positions where a chat's messages end, stored as checkpoints. Throws k3::Error for an
    // empty prompt.
    std::vector<float> prefill(std::span<const int32_t> prompt, int64_t* reused = nullptr,
                               std::span<const int64_t> boundaries = {});
    // Feeds one more token (a sampled one) and returns the logits after it.
    std::vector<float> feed(int32_t token);

    const std::vector<int32_t>& consumed() const { return session_->tokens(); }
    void reset();  // forget the session's state (the cache keeps its states)
    Session& session() { return *session_; }
    PrefixCache& cache() { return *cache_; }

private:
    std::unique_ptr<Session> session_;
    std::unique_ptr<PrefixCache> own_cache_;
    PrefixCache* cache_;
};

enum class FinishReason {
    stop_id,  // sampled one of GenerationParams::stop_ids (the last generated token)
    length,   // max_tokens generated
    context,  // the context length is full
    caller,   // the token callback returned false
};
std::string_view finish_reason_name(FinishReason reason);  // "stop", "length", "context", "caller"

struct GenerationParams {
    SamplerParams sampling;
    int64_t max_tokens = -1;        // < 0: no limit but the context length
    int64_t n_ctx = 0;              // context length in tokens; <= 0: the model's n_ctx_train
    std::vector<int32_t> stop_ids;  // e.g. Tokenizer::end_of_generation_ids()
};

struct GenerationStats {
    int64_t prompt_tokens = 0;  // prompt tokens fed by this call
    int64_t reused_tokens = 0;  // prompt tokens whose state came from the cache
    double prompt_seconds = 0;
    int64_t generated_tokens = 0;
    double generation_seconds = 0;  // from the first sample to the end
    double prompt_tokens_per_second() const;
    double generated_tokens_per_second() const;
};

struct GenerationResult {
    std::vector<int32_t> tokens;  // every sampled id, a final stop id included
    FinishReason finish = FinishReason::length;
    GenerationStats stats;
};

// Sees each sampled id (stop ids too) before it is fed; returning false ends generation there.
using TokenCallback = std::function<bool(int32_t token)>;

// `boundaries` as for CachedSession::prefill. Throws k3::Error for an empty prompt or one that does not fit in the context.
GenerationResult generate(CachedSession& session, std::span<const int32_t> prompt,
                          const GenerationParams& params, const TokenCallback& on_token,
                          std::span<const int64_t> boundaries = {});

}  // namespace k3::runtime
