#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "util/error.h"

namespace k3::grammar {

namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
public:
    Parser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

    std::shared_ptr<const Grammar> parse() {
        skip_space(true);
        while (!at_end()) {
            parse_rule();
            skip_space(true);
        }
        auto root = names_.find("root");
        if (root == names_.end() || !defined_[root->second]) throw Error("grammar: there is no rule named 'root'");
        for (size_t i = 0; i < grammar_.rules.size(); ++i)
            if (!defined_[i])
                throw Error("grammar: rule '" + grammar_.rules[i].name + "' is used at " + where(first_use_[i]) +
                            " but never defined");
        grammar_.root = root->second;
        check_left_recursion();
        check_matches_something();
        return std::make_shared<const Grammar>(std::move(grammar_));
    }

private:
    bool at_end() const { return pos_ >= text_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

    std::string where(size_t offset) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < offset && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        return "line " + std::to_string(line) + ", column " + std::to_string(column);
    }
    [[noreturn]] void fail(const std::string& what) const { throw Error("grammar: " + what + " at " + where(pos_)); }

    void skip_space(bool newline_ok) {
        while (!at_end()) {
            const char c = peek();
            if (c == '#') {
                while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
            } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (is_name_char(peek())) ++pos_;
        if (pos_ == start) fail("expected a rule name");
        return std::string(text_.substr(start, pos_ - start));
    }

    uint32_t rule_index(const std::string& name, size_t use_offset) {
        auto [it, inserted] = names_.try_emplace(name, uint32_t(grammar_.rules.size()));
        if (inserted) {
            grammar_.rules.push_back({name, {}});
            defined_.push_back(false);
            first_use_.push_back(use_offset);
        }
        return it->second;
    }

    uint32_t new_rule(const std::string& parent) {
        const std::string name = parent + "-" + std::to_string(++synthesized_);
        const uint32_t index = rule_index(name, pos_);
        defined_[index] = true;
        return index;
    }

    void count(size_t elements) {
        n_elements_ += elements;
        if (n_elements_ > limits_.max_elements)
            fail("the grammar expands to more than " + std::to_string(limits_.max_elements) +
                 " elements (GrammarLimits::max_elements)");
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string name = parse_name();
        skip_space(false);
        if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
        pos_ += 3;
        skip_space(true);
        const uint32_t index = rule_index(name, start);
        if (defined_[index]) {
            pos_ = start;
            fail("rule '" + name + "' is defined twice");
        }
        defined_[index] = true;
        std::vector<Sequence> alternatives = parse_alternatives(name, false);
        grammar_.rules[index].alternatives = std::move(alternatives);
        if (!at_end() && peek() != '\n' && peek() != '\r') fail("expected the end of the line after rule '" + name + "'");
    }

    std::vector<Sequence> parse_alternatives(const std::string& rule_name, bool nested) {
        std::vector<Sequence> alternatives;
        alternatives.push_back(parse_sequence(rule_name, nested));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            alternatives.push_back(parse_sequence(rule_name, nested));
        }
        return alternatives;
    }

    // One code point of a literal or class: an escape or a UTF-8 sequence.
    uint32_t parse_char() {
        if (at_end()) fail("unexpected end of the grammar");
        if (peek() == '\\') {
            const char c = peek(1);
            switch (c) {
                case 'x': return parse_hex(2);
                case 'u': return parse_hex(4);
                case 'U': return parse_hex(8);
                case 't': pos_ += 2; return '\t';
                case 'r': pos_ += 2; return '\r';
                case 'n': pos_ += 2; return '\n';
                case '\\': case '"': case '[': case ']': pos_ += 2; return uint32_t(c);
                default: fail("unknown escape '\\" + std::string(1, c) + "'");
            }
        }
        const auto byte = uint8_t(peek());
        const int length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
        if (length == 0 || pos_ + size_t(length) > text_.size()) fail("invalid UTF-8");
        uint32_t value = length == 1 ? byte : byte & (0x7F >> length);
        for (int i = 1; i < length; ++i) {
            const auto next = uint8_t(text_[pos_ + size_t(i)]);
            if ((next & 0xC0) != 0x80) fail("invalid UTF-8");
            value = (value << 6) | (next & 0x3F);
        }
        pos_ += size_t(length);
        return value;
    }

    uint32_t parse_hex(size_t digits) {
        pos_ += 2;
        uint32_t value = 0;
        for (size_t i = 0; i < digits; ++i, ++pos_) {
            const char c = peek();
            const int digit = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (digit < 0) fail("expected " + std::to_string(digits) + " hex digits in an escape");
            value = (value << 4) | uint32_t(digit);
        }
        if (value > kMaxSymbol) fail("escape beyond \\U001FFFFF");
        return value;
    }

    uint64_t parse_count() {
        if (!is_digit(peek())) fail("expected a number in '{...}'");
        uint64_t value = 0;
        while (is_digit(peek())) {
            value = value * 10 + uint64_t(peek() - '0');
            if (value > limits_.max_elements) fail("repetition count beyond GrammarLimits::max_elements");
            ++pos_;
        }
        return value;
    }

    Sequence parse_sequence(const std::string& rule_name, bool nested) {
        Sequence sequence;
        size_t item_start = 0;  // where the last item began (what a repetition applies to)
        bool have_item = false;
        for (;;) {
            const char c = peek();
            if (c == '"') {
                ++pos_;
                item_start = sequence.size();
                while (peek() != '"') {
                    const uint32_t point = parse_char();
                    sequence.push_back({Element::Kind::chars, {{point, point}}, false, 0});
                }
                ++pos_;
                count(sequence.size() - item_start);
                have_item = true;
            } else if (c == '[') {
                ++pos_;
                Element element;
                if (peek() == '^') {
                    element.negated = true;
                    ++pos_;
                }
                while (peek() != ']') {
                    const uint32_t first = parse_char();
                    uint32_t last = first;
                    if (peek() == '-' && peek(1) != ']') {
                        ++pos_;
                        last = parse_char();
                        if (last < first) fail("character range ends before it starts");
                    }
                    element.ranges.push_back({first, last});
                }
                ++pos_;
                item_start = sequence.size();
                sequence.push_back(std::move(element));
                count(1);
                have_item = true;
            } else if (c == '.') {
                ++pos_;
                item_start = sequence.size();
                sequence.push_back({Element::Kind::chars, {}, true, 0});
                count(1);
                have_item = true;
            } else if (c == '(') {
                ++pos_;
                skip_space(true);
                const uint32_t group = new_rule(rule_name);
                std::vector<Sequence> alternatives = parse_alternatives(rule_name, true);
                if (peek() != ')') fail("expected ')'");
                ++pos_;
                grammar_.rules[group].alternatives = std::move(alternatives);
                item_start = sequence.size();
                sequence.push_back({Element::Kind::rule, {}, false, group});
                count(1);
                have_item = true;
            } else if (is_name_char(c)) {
                const size_t start = pos_;
                const std::string name = parse_name();
                item_start = sequence.size();
                sequence.push_back({Element::Kind::rule, {}, false, rule_index(name, start)});
                count(1);
                have_item = true;
            } else if (c == '<') {
                fail("token references (<...>) are not supported");
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (!have_item) fail(std::string("'") + c + "' follows nothing it could repeat");
                ++pos_;
                uint64_t min = 0;
                std::optional<uint64_t> max;
                if (c == '+') min = 1;
                if (c == '?') max = 1;
                if (c == '{') {
                    skip_space(nested);
                    min = parse_count();
                    skip_space(nested);
                    if (peek() == '}') {
                        max = min;
                    } else if (peek() == ',') {
                        ++pos_;
                        skip_space(nested);
                        if (is_digit(peek())) max = parse_count();
                        skip_space(nested);
                        if (max && *max < min) fail("repetition {m,n} with n < m");
                    }
                    if (peek() != '}') fail("expected '}'");
                    ++pos_;
                }
                Sequence item(sequence.begin() + std::ptrdiff_t(item_start), sequence.end());
                sequence.resize(item_start);
                repeat(sequence, item, min, max, rule_name);
                have_item = false;  // "x**" repeats nothing new
            } else {
                break;
            }
            skip_space(nested);
        }
        return sequence;
    }

    // Appends item{min,max} (no max: unbounded) to `out`, as rules:
    // x{2,4} -> x x R1, R1 ::= x R2 | "", R2 ::= x | "";  x{1,} -> x R, R ::= x R | "".
    void repeat(Sequence& out, const Sequence& item, uint64_t min, std::optional<uint64_t> max,
                const std::string& rule_name) {
        count(item.size() * size_t(std::max<uint64_t>(min, max.value_or(min + 1))));
        for (uint64_t i = 0; i < min; ++i) out.insert(out.end(), item.begin(), item.end());
        if (!max) {
            const uint32_t star = new_rule(rule_name);
            Sequence again = item;
            again.push_back({Element::Kind::rule, {}, false, star});
            grammar_.rules[star].alternatives = {std::move(again), {}};
            out.push_back({Element::Kind::rule, {}, false, star});
            return;
        }
        std::optional<uint32_t> tail;  // the rule for the remaining optional copies
        for (uint64_t i = min; i < *max; ++i) {
            const uint32_t optional = new_rule(rule_name);
            Sequence once = item;
            if (tail) once.push_back({Element::Kind::rule, {}, false, *tail});
            grammar_.rules[optional].alternatives = {std::move(once), {}};
            tail = optional;
        }
        if (tail) out.push_back({Element::Kind::rule, {}, false, *tail});
    }

    // Rules that can match the empty string, to the fixed point.
    std::vector<bool> nullable_rules() const {
        std::vector<bool> nullable(grammar_.rules.size(), false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < grammar_.rules.size(); ++r) {
                if (nullable[r]) continue;
                for (const Sequence& alt : grammar_.rules[r].alternatives) {
                    if (std::ranges::all_of(alt, [&](const Element& e) { return e.kind == Element::Kind::rule && nullable[e.rule]; })) {
                        nullable[r] = changed = true;
                        break;
                    }
                }
            }
        }
        return nullable;
    }

    // A rule that reaches itself through references at the start of an alternative (past
    // elements that may match nothing) would expand forever without consuming a code point.
    void check_left_recursion() const {
        const std::vector<bool> nullable = nullable_rules();
        const size_t n = grammar_.rules.size();
        std::vector<std::vector<uint32_t>> leading(n);
        for (size_t r = 0; r < n; ++r)
            for (const Sequence& alt : grammar_.rules[r].alternatives)
                for (const Element& e : alt) {
                    if (e.kind != Element::Kind::rule) break;
                    leading[r].push_back(e.rule);
                    if (!nullable[e.rule]) break;
                }
        enum Mark : uint8_t { unseen, open, closed };
        std::vector<Mark> mark(n, unseen);
        std::vector<uint32_t> path;
        std::function<void(uint32_t)> visit = [&](uint32_t r) {
            mark[r] = open;
            path.push_back(r);
            for (uint32_t next : leading[r]) {
                if (mark[next] == open) {
                    std::string cycle;
                    for (auto it = std::ranges::find(path, next); it != path.end(); ++it) cycle += grammar_.rules[*it].name + " -> ";
                    throw Error("grammar: rule '" + grammar_.rules[next].name +
                                "' is left-recursive (it reaches itself without consuming input: " + cycle +
                                grammar_.rules[next].name + ")");
                }
                if (mark[next] == unseen) visit(next);
            }
            path.pop_back();
            mark[r] = closed;
        };
        for (uint32_t r = 0; r < n; ++r)
            if (mark[r] == unseen) visit(r);
    }

    // The root must derive at least one finite string.
    void check_matches_something() const {
        const size_t n = grammar_.rules.size();
        std::vector<bool> productive(n, false);
        auto element_productive = [&](const Element& e) {
            return e.kind == Element::Kind::rule ? bool(productive[e.rule]) : e.matches_any_in(0, kMaxSymbol);
        };
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (productive[r]) continue;
                for (const Sequence& alt : grammar_.rules[r].alternatives)
                    if (std::ranges::all_of(alt, element_productive)) {
                        productive[r] = changed = true;
                        break;
                    }
            }
        }
        if (!productive[grammar_.root])
            throw Error("grammar: the grammar can match nothing (every alternative of 'root' needs a rule that never "
                        "ends or a character class that matches no character)");
    }

    std::string_view text_;
    GrammarLimits limits_;
    size_t pos_ = 0;
    Grammar grammar_;
    std::unordered_map<std::string, uint32_t> names_;
    std::vector<bool> defined_;
    std::vector<size_t> first_use_;
    size_t n_elements_ = 0;
    int synthesized_ = 0;
};

}  // namespace

std::string gbnf_literal(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (uint8_t(c) < 0x20 || c == 0x7F) {
            static constexpr char kHex[] = "0123456789ABCDEF";
            out += "\\x";
            out += kHex[uint8_t(c) >> 4];
            out += kHex[uint8_t(c) & 0xF];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const GrammarLimits& limits) {
    return Parser(text, limits).parse();
}

}  // namespace k3::grammar
