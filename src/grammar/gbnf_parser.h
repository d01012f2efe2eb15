// GBNF, llama.cpp's grammar syntax, parsed into a Grammar:
//
//   root   ::= answer ("," answer)*      # comments run to the end of the line
//   answer ::= "yes" | "no" | [0-9]{1,3} | [^\x00-\x1F"]+ | .
//
// rules `name ::= alternatives` (names of [a-zA-Z0-9-]; one rule per line, a rule continues on
// the next line inside parentheses or after `|`), literals "..." and classes [...] / [^...] with
// ranges and the escapes \x.. \u.... \U........ \t \r \n \\ \" \[ \] (\U up to 001FFFFF: past
// Unicode, the symbols of grammar.h), `.` (any Unicode code point),
// groups, and the repetitions * + ? {m} {m,} {m,n}. The grammar starts at `root`.
//
// Every problem is a k3::Error naming it and where: a syntax error with its line and column, an
// undefined rule with the line of its first use, a rule that reaches itself without consuming
// input (left recursion, which would never make progress), and a grammar that can match no
// string at all.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "grammar/grammar.h"

namespace k3::grammar {

struct GrammarLimits {
    // Elements after repetitions are expanded: x{m,n} costs n copies of x, so this bounds the
    // memory a short grammar text such as "x{999999999}" could ask for.
    size_t max_elements = size_t(1) << 20;
};

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const GrammarLimits& limits = {});

// A GBNF literal matching exactly `text` (UTF-8): quotes, backslashes and control characters
// escaped.
std::string gbnf_literal(std::string_view text);

}  // namespace k3::grammar
