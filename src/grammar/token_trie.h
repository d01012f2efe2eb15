// A vocabulary's token byte strings as a trie, built once per vocabulary, so that a grammar
// matcher can test every token by walking shared prefixes once instead of token by token.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace k3::grammar {

class TokenTrie {
public:
    struct Edge {
        uint8_t byte;
        uint32_t child;
    };
    struct Node {
        uint32_t first_edge = 0, n_edges = 0;    // into edges(), sorted by byte
        uint32_t first_token = 0, n_tokens = 0;  // into token_ids(): the tokens ending here
    };

    // token_bytes[id] is token id's byte string; an empty one (e.g. a control token) is left out
    // and never allowed by a grammar.
    explicit TokenTrie(std::span<const std::string> token_bytes);

    size_t n_tokens() const { return n_tokens_; }
    const Node& root() const { return nodes_[0]; }
    const Node& node(uint32_t index) const { return nodes_[index]; }
    std::span<const Edge> edges(const Node& node) const { return {edges_.data() + node.first_edge, node.n_edges}; }
    std::span<const int32_t> tokens(const Node& node) const { return {token_ids_.data() + node.first_token, node.n_tokens}; }

private:
    void build(uint32_t node, std::span<const int32_t> sorted, size_t depth, std::span<const std::string> bytes);

    size_t n_tokens_ = 0;
    std::vector<Node> nodes_;
    std::vector<Edge> edges_;
    std::vector<int32_t> token_ids_;
};

}  // namespace k3::grammar
