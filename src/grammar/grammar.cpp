#include "grammar/grammar.h"

namespace k3::grammar {

bool Element::matches(uint32_t code_point) const {
    return matches_any_in(code_point, code_point);
}

bool Element::matches_any_in(uint32_t first, uint32_t last) const {
    if (!negated) {
        for (const CodePointRange& r : ranges)
            if (r.first <= last && first <= r.last) return true;
        return false;
    }
    // Negated: some code point of [first, last] lies outside every range. Walk the interval
    // from `first`, jumping past each range that covers the current point.
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

}  // namespace k3::grammar
