// Jinja2's lexer with trim_blocks and lstrip_blocks on and keep_trailing_newline off: template
// text becomes Data tokens (whitespace control already applied; comments dropped, raw blocks
// kept verbatim) and the inside of {{ }} / {% %} becomes expression tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3::jinja {

struct Token {
    enum class Type { Data, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };
    Type type;
    std::string text;  // Data text, a name, a decoded string literal, the digits, an operator
    int line;
};

// Throws TemplateError(TemplateSyntaxError) for an unclosed tag, comment or string, an
// unexpected character, or unbalanced brackets.
std::vector<Token> tokenize(std::string_view source);

}  // namespace k3::jinja
