#include "text/bpe.h"

#include <queue>
#include <tuple>

namespace k3::text {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// A candidate merge of the part starting at byte `start` with its right neighbour. `generation`
// tells whether the candidate is stale: either part changed since it was pushed.
struct Candidate {
    uint32_t rank;
    uint32_t start;
    uint32_t generation;
    bool operator>(const Candidate& o) const {
        return std::tie(rank, start) > std::tie(o.rank, o.start);
    }
};

}  // namespace

std::vector<std::string_view> bpe_split(std::string_view piece, const RankLookup& rank_of) {
    const auto n = static_cast<uint32_t>(piece.size());
    std::vector<std::string_view> parts;
    if (n == 0) return parts;

    // Parts form a linked list indexed by their start byte; a merge absorbs the right part, so
    // a part's start never moves. next[i] == n marks the last part.
    std::vector<uint32_t> next(n), prev(n), generation(n, 0);
    std::vector<bool> alive(n, true);
    for (uint32_t i = 0; i < n; ++i) {
        next[i] = i + 1;
        prev[i] = i == 0 ? kNone : i - 1;
    }
    auto end_of = [&](uint32_t i) { return next[i]; };

    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    auto push_pair = [&](uint32_t i) {
        if (i == kNone || next[i] >= n) return;
        const uint32_t right = next[i];
        if (auto r = rank_of(piece.substr(i, end_of(right) - i))) heap.push({*r, i, generation[i]});
    };
    for (uint32_t i = 0; i + 1 < n; ++i) push_pair(i);

    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        if (!alive[c.start] || c.generation != generation[c.start]) continue;
        const uint32_t right = next[c.start];
        alive[right] = false;
        next[c.start] = next[right];
        if (next[c.start] < n) prev[next[c.start]] = c.start;
        ++generation[c.start];
        push_pair(c.start);
        if (prev[c.start] != kNone) {
            ++generation[prev[c.start]];
            push_pair(prev[c.start]);
        }
    }

    for (uint32_t i = 0; i < n; i = next[i]) parts.push_back(piece.substr(i, next[i] - i));
    return parts;
}

}  // namespace k3::text
