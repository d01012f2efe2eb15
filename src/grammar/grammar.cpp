#include "grammar/grammar.h"

#include <algorithm>

namespace k3::grammar {

bool Element::matches(uint32_t code_point) const {
    return matches_any_in(code_point, code_point);
}

bool Element::matches_any_in(uint32_t first, uint32_t last) const {
    if (first > last) return false;
    if (!negated) {
        for (const CodePointRange& r : ranges)
            if (r.first <= last && first <= r.last) return true;
        return false;
    }
    // Negated: some Unicode code point of [first, last] lies outside every range. Walk the
    // interval from `first`, jumping past each range that covers the current point.
    if (first > kMaxUnicode) return false;
    last = std::min(last, kMaxUnicode);
    uint32_t point = first;
    for (bool moved = true; moved;) {
        moved = false;
        for (const CodePointRange& r : ranges) {
            if (r.first <= point && point <= r.last) {
                if (r.last >= last) return false;
                point = r.last + 1;
                moved = true;
            }
        }
    }
    return true;
}

namespace {

// The parts' rules side by side; the new root refers to each part's root, in one sequence or as
// one alternative each.
std::shared_ptr<const Grammar> combine(std::span<const std::shared_ptr<const Grammar>> parts, bool in_sequence) {
    auto joined = std::make_shared<Grammar>();
    Sequence sequence;
    std::vector<Sequence> choices;
    for (const auto& part : parts) {
        const auto offset = uint32_t(joined->rules.size());
        for (Rule rule : part->rules) {
            for (Sequence& alternative : rule.alternatives)
                for (Element& element : alternative)
                    if (element.kind == Element::Kind::rule) element.rule += offset;
            joined->rules.push_back(std::move(rule));
        }
        const Element reference{Element::Kind::rule, {}, false, part->root + offset};
        if (in_sequence) sequence.push_back(reference);
        else choices.push_back({reference});
    }
    joined->root = uint32_t(joined->rules.size());
    joined->rules.push_back({"root", in_sequence ? std::vector<Sequence>{std::move(sequence)} : std::move(choices)});
    return joined;
}

}  // namespace

std::shared_ptr<const Grammar> concatenate(std::span<const std::shared_ptr<const Grammar>> parts) {
    return combine(parts, true);
}

std::shared_ptr<const Grammar> alternatives(std::span<const std::shared_ptr<const Grammar>> parts) {
    return combine(parts, false);
}

}  // namespace k3::grammar
