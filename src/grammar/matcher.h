// Incremental matching of generated text against a Grammar: a pushdown automaton whose state is
// the set of every parse stack still alive (each a chain of rule positions), advanced one code
// point at a time over UTF-8 bytes that may split a code point across tokens.
//
//   grammar::Matcher matcher(grammar::parse_gbnf(text));
//   matcher.allowed_tokens(trie, allowed);   // which tokens can continue the text
//   matcher.accept(trie_bytes_of(token));     // after sampling one of them
//   if (matcher.can_end()) ...                // the text so far is a complete match
//
// Stacks are interned (two equal stacks are one index), so the state stays a small sorted set
// even for ambiguous grammars; MatcherLimits::max_stacks bounds it for pathological ones. Sets
// and the transitions between them are kept for the matcher's life (one request), so
// masking mostly repeats look-ups.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_trie.h"

namespace k3::grammar {

struct MatcherLimits {
    // Parse stacks alive at once; an ambiguity that keeps more (e.g. a rule with many
    // alternatives that each begin alike, nested) is an error naming this bound.
    size_t max_stacks = 4096;
    // Token masks kept per state: inside a repetition (a JSON string, free text) the state
    // repeats from token to token, so its mask is computed once. Each costs a byte per token.
    size_t cached_masks = 8;
};

class Matcher {
public:
    explicit Matcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits = {});

    // Advances over `bytes`; false (and the state unchanged) if they cannot continue the match.
    // Throws k3::Error when the state would exceed MatcherLimits::max_stacks.
    bool accept(std::string_view bytes);
    // Advances over one code point (a symbol past Unicode, see grammar.h); false (unchanged) if
    // it cannot come next or a UTF-8 sequence is half-way.
    bool accept_code_point(uint32_t code_point);
    bool allows_code_point(uint32_t code_point) const;
    // The text so far is a complete match (and no code point is half-way).
    bool can_end() const;
    // The text so far is a complete match that nothing can extend.
    bool must_end() const;
    // allowed[id] = 1 for each token of `trie` whose bytes can continue the text, else 0.
    void allowed_tokens(const TokenTrie& trie, std::vector<uint8_t>& allowed);

private:
    struct Frame {
        uint32_t rule, alternative, index;  // the next element to match
        int32_t parent;                     // the frame to resume after this rule; -1: none
        bool operator==(const Frame&) const = default;
    };
    struct FrameHash {
        size_t operator()(const Frame& f) const;
    };
    // A code point whose UTF-8 bytes have not all arrived.
    struct PartialCodePoint {
        uint32_t value = 0;
        uint8_t remaining = 0;  // continuation bytes still to come; 0: none pending
        uint8_t length = 0;     // the sequence's whole length
    };
    using Stacks = std::vector<int32_t>;  // sorted frame indices; -1 is the finished stack
    // A set of stacks, interned: equal sets are one state, so a transition computed once (the
    // usual case inside a repetition such as a JSON string) is a table look-up ever after.
    using State = int32_t;
    struct StateEntry {
        Stacks stacks;
        std::array<State, 128> ascii;  // transitions on ASCII code points; kUnknown until needed
    };

    int32_t intern(const Frame& frame);
    int32_t after(const Frame& frame);
    void expand(int32_t stack, Stacks& out);
    State intern_state(Stacks stacks);
    State advance(State from, uint32_t code_point);
    bool dead(State state) const { return states_[size_t(state)].stacks.empty(); }
    // Feeds one byte; false if it cannot continue.
    bool step(State from, const PartialCodePoint& partial, uint8_t byte, State& out, PartialCodePoint& out_partial);
    bool some_top_matches(State state, uint32_t first, uint32_t last) const;
    void walk(const TokenTrie& trie, const TokenTrie::Node& node, State state, const PartialCodePoint& partial,
              bool at_root, std::vector<uint8_t>& allowed);

    std::shared_ptr<const Grammar> grammar_;
    MatcherLimits limits_;
    std::vector<Frame> frames_;
    std::unordered_map<Frame, int32_t, FrameHash> frame_index_;
    std::vector<uint64_t> expanded_in_;  // per frame: the expansion pass that last expanded it
    uint64_t pass_ = 0;
    std::vector<StateEntry> states_;
    std::map<Stacks, State> state_index_;
    std::unordered_map<uint64_t, State> wide_transitions_;  // (state, non-ASCII code point) -> state
    State current_ = 0;
    PartialCodePoint partial_;
    struct CachedMask {
        State state;
        std::vector<uint8_t> allowed;
    };
    const TokenTrie* masked_trie_ = nullptr;  // the trie mask_cache_ holds masks for
    std::vector<CachedMask> mask_cache_;
    size_t next_evicted_ = 0;
};

}  // namespace k3::grammar
