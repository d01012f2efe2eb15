#include "grammar/matcher.h"

#include <algorithm>

#include "util/error.h"

namespace k3::grammar {

namespace {

constexpr int32_t kFinished = -1;
constexpr int32_t kUnknown = -2;  // a transition not computed yet

// The code points a UTF-8 sequence of `length` bytes may encode (no overlongs), used to check
// a sequence completed across bytes.
uint32_t min_code_point(uint8_t length) {
    switch (length) {
        case 2: return 0x80;
        case 3: return 0x800;
        case 4: return 0x10000;
        default: return 0;
    }
}

}  // namespace

size_t Matcher::FrameHash::operator()(const Frame& f) const {
    uint64_t h = (uint64_t(f.rule) << 32) ^ (uint64_t(f.alternative) << 20) ^ f.index;
    h ^= uint64_t(uint32_t(f.parent)) * 0x9E3779B97F4A7C15ull;
    return size_t(h ^ (h >> 29));
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits)
    : grammar_(std::move(grammar)), limits_(limits) {
    ++pass_;
    Stacks initial;
    const Rule& root = grammar_->rules[grammar_->root];
    for (uint32_t a = 0; a < root.alternatives.size(); ++a) expand(intern({grammar_->root, a, 0, kFinished}), initial);
    current_ = intern_state(std::move(initial));
}

int32_t Matcher::intern(const Frame& frame) {
    auto [it, inserted] = frame_index_.try_emplace(frame, int32_t(frames_.size()));
    if (inserted) {
        frames_.push_back(frame);
        expanded_in_.push_back(0);
    }
    return it->second;
}

// The stack once `frame`'s element is matched. A frame that would be at the end of its sequence
// is left out (a tail call), so a right-recursive repetition does not deepen the stack per item
// and the same parse reached in different ways is the same interned stack.
int32_t Matcher::after(const Frame& frame) {
    if (frame.index + 1 == grammar_->rules[frame.rule].alternatives[frame.alternative].size()) return frame.parent;
    return intern({frame.rule, frame.alternative, frame.index + 1, frame.parent});
}

// Moves `stack` to its next code point element (descending into rules, returning from finished
// ones) and adds every stack that results to `out`. The grammar has no left recursion (the
// parser refuses it), so this ends; a frame is expanded once per pass.
void Matcher::expand(int32_t stack, Stacks& out) {
    for (;;) {
        if (stack == kFinished) {
            out.push_back(kFinished);
            return;
        }
        if (expanded_in_[size_t(stack)] == pass_) return;
        expanded_in_[size_t(stack)] = pass_;
        const Frame frame = frames_[size_t(stack)];
        const Sequence& sequence = grammar_->rules[frame.rule].alternatives[frame.alternative];
        if (frame.index == sequence.size()) {
            stack = frame.parent;
            continue;
        }
        const Element& element = sequence[frame.index];
        if (element.kind == Element::Kind::chars) {
            out.push_back(stack);
            if (out.size() > limits_.max_stacks)
                throw Error("grammar: more than " + std::to_string(limits_.max_stacks) +
                            " parse states at once (MatcherLimits::max_stacks); the grammar is too ambiguous");
            return;
        }
        const int32_t resume = after(frame);
        const size_t n_alternatives = grammar_->rules[element.rule].alternatives.size();
        for (uint32_t a = 0; a < n_alternatives; ++a) expand(intern({element.rule, a, 0, resume}), out);
        return;
    }
}

Matcher::State Matcher::intern_state(Stacks stacks) {
    std::ranges::sort(stacks);
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    auto [it, inserted] = state_index_.try_emplace(stacks, State(states_.size()));
    if (inserted) {
        StateEntry entry{std::move(stacks), {}};
        entry.ascii.fill(kUnknown);
        states_.push_back(std::move(entry));
    }
    return it->second;
}

Matcher::State Matcher::advance(State from, uint32_t code_point) {
    const uint64_t wide_key = (uint64_t(uint32_t(from)) << 21) | code_point;
    if (code_point < 128) {
        if (const State known = states_[size_t(from)].ascii[code_point]; known != kUnknown) return known;
    } else if (auto it = wide_transitions_.find(wide_key); it != wide_transitions_.end()) {
        return it->second;
    }
    Stacks out;
    ++pass_;
    for (int32_t stack : states_[size_t(from)].stacks) {
        if (stack == kFinished) continue;
        const Frame frame = frames_[size_t(stack)];
        const Element& element = grammar_->rules[frame.rule].alternatives[frame.alternative][frame.index];
        if (element.matches(code_point)) expand(after(frame), out);
    }
    const State to = intern_state(std::move(out));
    if (code_point < 128) states_[size_t(from)].ascii[code_point] = to;
    else wide_transitions_.emplace(wide_key, to);
    return to;
}

bool Matcher::some_top_matches(State state, uint32_t first, uint32_t last) const {
    for (int32_t stack : states_[size_t(state)].stacks) {
        if (stack == kFinished) continue;
        const Frame& frame = frames_[size_t(stack)];
        if (grammar_->rules[frame.rule].alternatives[frame.alternative][frame.index].matches_any_in(first, last)) return true;
    }
    return false;
}

bool Matcher::step(State from, const PartialCodePoint& partial, uint8_t byte, State& out, PartialCodePoint& out_partial) {
    PartialCodePoint next;
    if (partial.remaining == 0) {
        if (byte < 0x80) {
            out = advance(from, byte);
            out_partial = {};
            return !dead(out);
        }
        const uint8_t length = (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
        if (length == 0) return false;  // a continuation byte or 0xF8..0xFF cannot start one
        next = {uint32_t(byte & (0x7F >> length)), uint8_t(length - 1), length};
    } else {
        if ((byte & 0xC0) != 0x80) return false;
        next = {(partial.value << 6) | (byte & 0x3F), uint8_t(partial.remaining - 1), partial.length};
    }
    if (next.remaining == 0) {
        const uint32_t point = next.value;
        if (point < min_code_point(next.length) || point > kMaxUnicode || (point >= 0xD800 && point <= 0xDFFF)) return false;
        out = advance(from, point);
        out_partial = {};
        return !dead(out);
    }
    // Some code point this sequence may still become must be wanted by a stack (and be one:
    // not an overlong form, beyond U+10FFFF, or a surrogate, which ED A0..BF can only begin).
    const uint32_t first = std::max(next.value << (6 * next.remaining), min_code_point(next.length));
    const uint32_t last = std::min((next.value << (6 * next.remaining)) | ((1u << (6 * next.remaining)) - 1), kMaxUnicode);
    if (first >= 0xD800 && last <= 0xDFFF) return false;
    if (!some_top_matches(from, first, last)) return false;
    out = from;
    out_partial = next;
    return true;
}

bool Matcher::accept(std::string_view bytes) {
    State state = current_;
    PartialCodePoint partial = partial_;
    for (char c : bytes)
        if (!step(state, partial, uint8_t(c), state, partial)) return false;
    current_ = state;
    partial_ = partial;
    return true;
}

bool Matcher::allows_code_point(uint32_t code_point) const {
    return partial_.remaining == 0 && some_top_matches(current_, code_point, code_point);
}

bool Matcher::accept_code_point(uint32_t code_point) {
    if (!allows_code_point(code_point)) return false;
    current_ = advance(current_, code_point);
    return true;
}

bool Matcher::can_end() const {
    return partial_.remaining == 0 && std::ranges::binary_search(states_[size_t(current_)].stacks, kFinished);
}

bool Matcher::must_end() const {
    return can_end() && states_[size_t(current_)].stacks.size() == 1;
}

void Matcher::allowed_tokens(const TokenTrie& trie, std::vector<uint8_t>& allowed) {
    const bool cacheable = partial_.remaining == 0 && limits_.cached_masks > 0;
    if (masked_trie_ != &trie) {
        mask_cache_.clear();
        masked_trie_ = &trie;
    }
    if (cacheable)
        for (const CachedMask& cached : mask_cache_)
            if (cached.state == current_) {
                allowed = cached.allowed;
                return;
            }
    allowed.assign(trie.n_tokens(), 0);
    walk(trie, trie.root(), current_, partial_, true, allowed);
    if (!cacheable) return;
    if (mask_cache_.size() < limits_.cached_masks) {
        mask_cache_.push_back({current_, allowed});
    } else {  // round robin: the oldest entry goes
        mask_cache_[next_evicted_] = {current_, allowed};
        next_evicted_ = (next_evicted_ + 1) % mask_cache_.size();
    }
}

void Matcher::walk(const TokenTrie& trie, const TokenTrie::Node& node, State state, const PartialCodePoint& partial,
                   bool at_root, std::vector<uint8_t>& allowed) {
    if (!at_root)
        for (int32_t id : trie.tokens(node)) allowed[size_t(id)] = 1;
    for (const TokenTrie::Edge& edge : trie.edges(node)) {
        State next = state;
        PartialCodePoint next_partial;
        if (step(state, partial, edge.byte, next, next_partial))
            walk(trie, trie.node(edge.child), next, next_partial, false, allowed);
    }
}

}  // namespace k3::grammar
