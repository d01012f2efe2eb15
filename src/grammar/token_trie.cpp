#include "grammar/token_trie.h"

#include <algorithm>

namespace k3::grammar {

TokenTrie::TokenTrie(std::span<const std::string> token_bytes) : n_tokens_(token_bytes.size()) {
    std::vector<int32_t> sorted;
    for (size_t id = 0; id < token_bytes.size(); ++id)
        if (!token_bytes[id].empty()) sorted.push_back(int32_t(id));
    // In byte order a token sorts before every token it is a prefix of, so each node's tokens
    // and children are contiguous runs.
    std::ranges::sort(sorted, [&](int32_t a, int32_t b) { return token_bytes[size_t(a)] < token_bytes[size_t(b)]; });
    nodes_.emplace_back();
    build(0, sorted, 0, token_bytes);
}

void TokenTrie::build(uint32_t node, std::span<const int32_t> sorted, size_t depth, std::span<const std::string> bytes) {
    size_t begin = 0;
    nodes_[node].first_token = uint32_t(token_ids_.size());
    while (begin < sorted.size() && bytes[size_t(sorted[begin])].size() == depth) token_ids_.push_back(sorted[begin++]);
    nodes_[node].n_tokens = uint32_t(token_ids_.size()) - nodes_[node].first_token;

    // The children: one per distinct byte at `depth`, their edges contiguous.
    std::vector<std::pair<size_t, size_t>> runs;
    for (size_t i = begin; i < sorted.size();) {
        const char byte = bytes[size_t(sorted[i])][depth];
        size_t j = i;
        while (j < sorted.size() && bytes[size_t(sorted[j])][depth] == byte) ++j;
        runs.emplace_back(i, j);
        i = j;
    }
    nodes_[node].first_edge = uint32_t(edges_.size());
    nodes_[node].n_edges = uint32_t(runs.size());
    for (const auto& [i, j] : runs) {
        edges_.push_back({uint8_t(bytes[size_t(sorted[i])][depth]), uint32_t(nodes_.size())});
        nodes_.emplace_back();
    }
    const uint32_t first_edge = nodes_[node].first_edge;
    for (size_t k = 0; k < runs.size(); ++k)
        build(edges_[first_edge + k].child, sorted.subspan(runs[k].first, runs[k].second - runs[k].first), depth + 1, bytes);
}

}  // namespace k3::grammar
