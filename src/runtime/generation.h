// What one generation is asked to do and how it ends, shared by the scheduler (the one
// generation loop, scheduler.h, which `k3 run`, `k3 chat` and the HTTP server all drive), and
// the prompt cache's way of resuming a session (resume_from_cache).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/prefix_cache.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace k3::runtime {

class Engine;

enum class FinishReason {
    stop_id,      // sampled one of GenerationParams::stop_ids (not delivered)
    stop_string,  // the sink said the answer is complete (a stop string matched)
    length,       // max_tokens generated
    context,      // the context length is full
};
// OpenAI's names, the same from the CLI and the server: "stop" (stop_id, stop_string) or
// "length" (length, context).
std::string_view finish_reason_name(FinishReason reason);

struct GenerationParams {
    SamplerParams sampling;
    int64_t max_tokens = -1;        // < 0: no limit but the context length
    std::vector<int32_t> stop_ids;  // e.g. Tokenizer::end_of_generation_ids()
};

// Brings `session` to the longest prefix of `prompt` that `cache` holds (or empties it) and
// returns the prompt positions, ascending, where states are to be stored in the cache while the
// rest of the prompt is fed: KDA chunk boundaries at `boundaries` (where a chat's messages end),
// where the prompt parts from a cached one, and every checkpoint interval.
std::vector<int64_t> resume_from_cache(PrefixCache& cache, Session& session, std::span<const int32_t> prompt,
                                       std::span<const int64_t> boundaries);

}  // namespace k3::runtime
