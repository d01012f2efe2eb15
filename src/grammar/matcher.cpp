#include "grammar/matcher.h"

#include <algorithm>

#include "util/error.h"

namespace k3::grammar {

namespace {

constexpr int32_t kFinished = -1;

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
    const Rule& root = grammar_->rules[grammar_->root];
    for (uint32_t a = 0; a < root.alternatives.size(); ++a) expand(intern({grammar_->root, a, 0, kFinished}), stacks_);
    finish_set(stacks_);
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

void Matcher::finish_set(Stacks& out) const {
    std::ranges::sort(out);
    out.erase(std::unique(out.begin(), out.end()), out.end());
}

void Matcher::advance(const Stacks& from, uint32_t code_point, Stacks& out) {
    out.clear();
    ++pass_;
    for (int32_t stack : from) {
        if (stack == kFinished) continue;
        const Frame frame = frames_[size_t(stack)];
        const Element& element = grammar_->rules[frame.rule].alternatives[frame.alternative][frame.index];
        if (element.matches(code_point)) expand(after(frame), out);
    }
    finish_set(out);
}

bool Matcher::some_top_matches(const Stacks& stacks, uint32_t first, uint32_t last) const {
    for (int32_t stack : stacks) {
        if (stack == kFinished) continue;
        const Frame& frame = frames_[size_t(stack)];
        if (grammar_->rules[frame.rule].alternatives[frame.alternative][frame.index].matches_any_in(first, last)) return true;
    }
    return false;
}

bool Matcher::step(const Stacks& from, const PartialCodePoint& partial, uint8_t byte, Stacks& out_stacks,
                   PartialCodePoint& out_partial) {
    PartialCodePoint next;
    if (partial.remaining == 0) {
        if (byte < 0x80) {
            advance(from, byte, out_stacks);
            out_partial = {};
            return !out_stacks.empty();
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
        if (point < min_code_point(next.length) || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) return false;
        advance(from, point, out_stacks);
        out_partial = {};
        return !out_stacks.empty();
    }
    // Some code point this sequence may still become must be wanted by a stack.
    const uint32_t first = next.value << (6 * next.remaining);
    const uint32_t last = first | ((1u << (6 * next.remaining)) - 1);
    if (!some_top_matches(from, std::max(first, min_code_point(next.length)), std::min<uint32_t>(last, 0x10FFFF)))
        return false;
    out_stacks = from;
    out_partial = next;
    return true;
}

bool Matcher::accept(std::string_view bytes) {
    Stacks stacks = stacks_, next;
    PartialCodePoint partial = partial_;
    for (char c : bytes) {
        if (!step(stacks, partial, uint8_t(c), next, partial)) return false;
        stacks.swap(next);
    }
    stacks_ = std::move(stacks);
    partial_ = partial;
    return true;
}

bool Matcher::allows_code_point(uint32_t code_point) const {
    return partial_.remaining == 0 && some_top_matches(stacks_, code_point, code_point);
}

bool Matcher::accept_code_point(uint32_t code_point) {
    if (!allows_code_point(code_point)) return false;
    Stacks next;
    advance(stacks_, code_point, next);
    stacks_ = std::move(next);
    return true;
}

bool Matcher::can_end() const {
    return partial_.remaining == 0 && std::ranges::binary_search(stacks_, kFinished);
}

bool Matcher::must_end() const {
    return can_end() && stacks_.size() == 1;
}

void Matcher::allowed_tokens(const TokenTrie& trie, std::vector<uint8_t>& allowed) {
    allowed.assign(trie.n_tokens(), 0);
    // Frames made while testing tokens are dropped afterwards: only accept() keeps any.
    const size_t mark = frames_.size();
    walk(trie, trie.root(), stacks_, partial_, 0, allowed);
    for (size_t i = mark; i < frames_.size(); ++i) frame_index_.erase(frames_[i]);
    frames_.resize(mark);
    expanded_in_.resize(mark);
}

void Matcher::walk(const TokenTrie& trie, const TokenTrie::Node& node, const Stacks& stacks,
                   const PartialCodePoint& partial, size_t depth, std::vector<uint8_t>& allowed) {
    if (depth > 0)
        for (int32_t id : trie.tokens(node)) allowed[size_t(id)] = 1;
    if (scratch_.size() <= depth) scratch_.resize(depth + 1);
    for (const TokenTrie::Edge& edge : trie.edges(node)) {
        PartialCodePoint next_partial;
        // scratch_ may grow (and move its vectors) deeper down, so index it afresh each time.
        if (!step(stacks, partial, edge.byte, scratch_[depth], next_partial)) continue;
        Stacks next = std::move(scratch_[depth]);
        walk(trie, trie.node(edge.child), next, next_partial, depth + 1, allowed);
        scratch_[depth] = std::move(next);
    }
}

}  // namespace k3::grammar
