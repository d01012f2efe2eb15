// A context-free grammar over Unicode code points, as parsed from GBNF (llama.cpp's grammar
// syntax, see gbnf_parser.h): rules of alternatives of sequences, where an element is a set of
// code points or a reference to a rule. Repetitions and groups are already rewritten into
// rules of their own, so the matcher only knows these two kinds of element.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace k3::grammar {

// Code points above U+10FFFF (up to kMaxSymbol) stand for tokens that are not text, such as a
// model's control tokens (TokenVocabulary::symbols): no UTF-8 spells them, and only a class
// that names them matches them ('.' and negated classes match Unicode only).
inline constexpr uint32_t kMaxUnicode = 0x10FFFF;
inline constexpr uint32_t kMaxSymbol = 0x1FFFFF;

struct CodePointRange {
    uint32_t first = 0, last = 0;  // inclusive
};

struct Element {
    enum class Kind { chars, rule } kind = Kind::chars;
    // chars: matches one code point inside (or, negated, outside) any of the ranges.
    std::vector<CodePointRange> ranges;
    bool negated = false;
    uint32_t rule = 0;  // rule: index into Grammar::rules

    bool matches(uint32_t code_point) const;
    // Whether some code point in [first, last] matches (for a UTF-8 sequence not yet complete).
    bool matches_any_in(uint32_t first, uint32_t last) const;
};

using Sequence = std::vector<Element>;

struct Rule {
    std::string name;  // as written, or "<parent>-<n>" for a group or repetition
    std::vector<Sequence> alternatives;
};

struct Grammar {
    std::vector<Rule> rules;
    uint32_t root = 0;
};

// A grammar matching a string of each part in turn (e.g. free text, then an answer the
// request's grammar shapes, then a fixed closing): the parts' rules side by side under a new
// root. Each part has already been checked, so the result needs no checks of its own.
std::shared_ptr<const Grammar> concatenate(std::span<const std::shared_ptr<const Grammar>> parts);
// A grammar matching a string of any one of the parts.
std::shared_ptr<const Grammar> alternatives(std::span<const std::shared_ptr<const Grammar>> parts);

}  // namespace k3::grammar
