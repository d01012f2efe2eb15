#include "runtime/generation.h"

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

}  // namespace k3::runtime
