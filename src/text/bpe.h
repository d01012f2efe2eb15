// Byte-pair encoding core, tiktoken's algorithm: start from single bytes and repeatedly merge
// the adjacent pair whose concatenation has the lowest rank (leftmost pair on ties) until no
// adjacent pair is a ranked token. Runs in O(n log n) rank lookups (a heap over live pairs), so
// a 100 KB piece costs milliseconds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace k3::text {

// Rank of a byte string of two or more bytes (lower merges first); nullopt if it is not a
// mergeable token. Single bytes are never looked up: every byte is a part to begin with.
using RankLookup = std::function<std::optional<uint32_t>(std::string_view bytes)>;

// Splits `piece` into its BPE parts, in order; the parts are views into `piece` and
// concatenate to it. An empty piece gives no parts.
std::vector<std::string_view> bpe_split(std::string_view piece, const RankLookup& rank_of);

}  // namespace k3::text
