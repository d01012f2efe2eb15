#include "jinja/lexer.h"

#include <cctype>
#include <cstring>

#include "jinja/error.h"
#include "jinja/strings.h"
#include "jinja/value.h"

namespace k3::jinja {
namespace {

[[noreturn]] void syntax_error(const std::string& message, int line) {
    raise("TemplateSyntaxError", message + " (line " + std::to_string(line) + ")");
}

bool starts_with(std::string_view s, size_t pos, std::string_view prefix) {
    return s.substr(pos, prefix.size()) == prefix;
}

// Jinja2 turns \r\n and \r into \n and, with keep_trailing_newline off, drops one final newline.
std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out.push_back('\n');
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out.push_back(source[i]);
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

size_t skip_whitespace(std::string_view s, size_t pos) {
    while (pos < s.size()) {
        char32_t c;
        const size_t n = utf8_char_at(s, pos, &c);
        if (!py_isspace(c)) break;
        pos += n;
    }
    return pos;
}

// Byte length of text without its trailing (Unicode) whitespace: Python's str.rstrip().
size_t rstrip_length(std::string_view text) {
    size_t end = 0, pos = 0;
    while (pos < text.size()) {
        char32_t c;
        pos += utf8_char_at(text, pos, &c);
        if (!py_isspace(c)) end = pos;
    }
    return end;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// A string literal's body decoded as Python's "unicode-escape" codec decodes it.
std::string unescape_literal(std::string_view raw, int line) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\' || i + 1 == raw.size()) {
            out.push_back(raw[i]);
            continue;
        }
        const char e = raw[++i];
        switch (e) {
            case '\n': break;
            case '\\': out.push_back('\\'); break;
            case '\'': out.push_back('\''); break;
            case '"': out.push_back('"'); break;
            case 'a': out.push_back('\a'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'v': out.push_back('\v'); break;
            case 'x':
            case 'u':
            case 'U': {
                const size_t digits = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
                char32_t c = 0;
                for (size_t k = 1; k <= digits; ++k) {
                    const int h = i + k < raw.size() ? hex_value(raw[i + k]) : -1;
                    if (h < 0) syntax_error("truncated \\" + std::string(1, e) + " escape", line);
                    c = c * 16 + static_cast<char32_t>(h);
                }
                if (c > 0x10FFFF) syntax_error("illegal Unicode character", line);
                append_utf8(out, c);
                i += digits;
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    char32_t c = 0;
                    size_t k = 0;
                    while (k < 3 && i + k < raw.size() && raw[i + k] >= '0' && raw[i + k] <= '7')
                        c = c * 8 + static_cast<char32_t>(raw[i + k++] - '0');
                    append_utf8(out, c);
                    i += k - 1;
                } else {
                    out.push_back('\\');
                    out.push_back(e);
                }
        }
    }
    return out;
}

bool is_name_start(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool is_name_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// Digits with optional single underscores between them (Python's (\d+_)*\d+).
size_t match_digits(std::string_view s, size_t pos) {
    size_t i = pos;
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return pos;
    while (i < s.size()) {
        if (std::isdigit(static_cast<unsigned char>(s[i]))) {
            ++i;
        } else if (s[i] == '_' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
            ++i;
        } else {
            break;
        }
    }
    return i;
}

// Length of a float literal at pos (Jinja2's float_re), 0 if none.
size_t match_float(std::string_view s, size_t pos) {
    if (pos > 0 && s[pos - 1] == '.') return 0;
    const size_t int_end = match_digits(s, pos);
    if (int_end == pos) return 0;
    size_t i = int_end;
    bool fraction = false;
    if (i + 1 < s.size() && s[i] == '.') {
        const size_t frac_end = match_digits(s, i + 1);
        if (frac_end > i + 1) {
            i = frac_end;
            fraction = true;
        }
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        const size_t exp_end = match_digits(s, j);
        if (exp_end > j) return exp_end - pos;
    }
    return fraction ? i - pos : 0;
}

size_t match_integer(std::string_view s, size_t pos) {
    if (s[pos] == '0' && pos + 1 < s.size() && s[pos + 1] != '\0' && std::strchr("bBoOxX", s[pos + 1])) {
        const char base = static_cast<char>(std::tolower(static_cast<unsigned char>(s[pos + 1])));
        auto ok = [&](char c) {
            if (base == 'b') return c == '0' || c == '1';
            if (base == 'o') return c >= '0' && c <= '7';
            return hex_value(c) >= 0;
        };
        size_t i = pos + 2;
        while (i < s.size() && (ok(s[i]) || (s[i] == '_' && i + 1 < s.size() && ok(s[i + 1])))) ++i;
        if (i > pos + 2) return i - pos;
    }
    return match_digits(s, pos) - pos;
}

constexpr std::string_view kTwoCharOperators[] = {"//", "**", "==", "!=", ">=", "<="};
constexpr std::string_view kOneCharOperators = "+-/*%~[](){}=.:|,;<>";

class Lexer {
public:
    explicit Lexer(std::string_view source) : src_(normalize_source(source)) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            const size_t tag = find_tag(pos_);
            if (tag == std::string::npos) {
                emit_data(pos_, src_.substr(pos_));
                break;
            }
            const char kind = src_[tag + 1];
            size_t after = tag + 2;
            const char sign = after < src_.size() && (src_[after] == '-' || src_[after] == '+') ? src_[after] : 0;
            if (sign) ++after;
            std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
            if (sign == '-') {
                text = text.substr(0, rstrip_length(text));
            } else if (sign != '+' && kind != '{') {
                // lstrip_blocks: drop the spaces/tabs that precede a block or comment on its line.
                const size_t line_start = text.rfind('\n') + 1;
                if ((line_start > 0 || line_starting_) && line_start < text.size() &&
                    rstrip_length(text.substr(line_start)) == 0)
                    text = text.substr(0, line_start);
            }
            emit_data(pos_, text);
            line_starting_ = false;
            pos_ = after;
            if (kind == '#') {
                lex_comment(tag);
            } else if (kind == '%' && lex_raw(tag)) {
                continue;
            } else {
                lex_tag(kind, tag);
            }
        }
        tokens_.push_back({Token::Type::End, "", line_of(src_.size())});
        return std::move(tokens_);
    }

private:
    size_t find_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        return std::string::npos;
    }

    int line_of(size_t pos) {
        for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_)
            if (src_[line_pos_] == '\n') ++line_;
        return line_;
    }

    void emit_data(size_t pos, std::string_view text) {
        if (text.empty()) return;
        tokens_.push_back({Token::Type::Data, std::string(text), line_of(pos)});
    }

    // End of a block or comment: "+%}" keeps what follows, "-%}" strips all whitespace after
    // it, a plain "%}" eats one newline (trim_blocks).
    void finish_block_end(size_t close_end, char sign) {
        size_t end = close_end;
        if (sign == '-') {
            end = skip_whitespace(src_, end);
        } else if (sign != '+' && end < src_.size() && src_[end] == '\n') {
            ++end;
        }
        line_starting_ = end > 0 && src_[end - 1] == '\n';
        pos_ = end;
    }

    void lex_comment(size_t tag) {
        const size_t close = src_.find("#}", pos_);
        if (close == std::string::npos) syntax_error("Missing end of comment tag", line_of(tag));
        const char sign = close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
        line_of(close);
        finish_block_end(close + 2, sign);
    }

    // {% raw %}...{% endraw %}: the body is data, untouched.
    bool lex_raw(size_t tag) {
        size_t p = skip_whitespace(src_, pos_);
        if (!starts_with(src_, p, "raw")) return false;
        p = skip_whitespace(src_, p + 3);
        if (starts_with(src_, p, "-%}")) {
            p = skip_whitespace(src_, p + 3);
        } else if (starts_with(src_, p, "%}")) {
            p += 2;
        } else {
            return false;
        }
        for (size_t open = src_.find("{%", p); open != std::string::npos; open = src_.find("{%", open + 2)) {
            size_t q = open + 2;
            const char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : 0;
            if (sign) ++q;
            q = skip_whitespace(src_, q);
            if (!starts_with(src_, q, "endraw")) continue;
            q = skip_whitespace(src_, q + 6);
            char end_sign = 0;
            if (starts_with(src_, q, "-%}") || starts_with(src_, q, "+%}")) {
                end_sign = src_[q];
                q += 3;
            } else if (starts_with(src_, q, "%}")) {
                q += 2;
            } else {
                continue;
            }
            std::string_view body = std::string_view(src_).substr(p, open - p);
            if (sign == '-') {
                body = body.substr(0, rstrip_length(body));
            } else if (sign != '+') {
                const size_t line_start = body.rfind('\n') + 1;
                if (line_start > 0 && line_start < body.size() && rstrip_length(body.substr(line_start)) == 0)
                    body = body.substr(0, line_start);
            }
            emit_data(p, body);
            line_of(q);
            finish_block_end(q, end_sign);
            return true;
        }
        syntax_error("Missing end of raw directive", line_of(tag));
    }

    void lex_tag(char kind, size_t tag) {
        tokens_.push_back({kind == '{' ? Token::Type::VariableBegin : Token::Type::BlockBegin, "", line_of(tag)});
        const std::string_view close = kind == '{' ? "}}" : "%}";
        std::vector<char> brackets;
        while (true) {
            if (pos_ >= src_.size())
                syntax_error(std::string("unexpected end of template, expected '") +
                                 (kind == '{' ? "end of print statement" : "end of statement block") + "'",
                             line_of(pos_));
            if (brackets.empty()) {
                const bool strip = src_[pos_] == '-' && starts_with(src_, pos_ + 1, close);
                const bool keep = kind == '%' && src_[pos_] == '+' && starts_with(src_, pos_ + 1, close);
                if (strip || keep || starts_with(src_, pos_, close)) {
                    tokens_.push_back({kind == '{' ? Token::Type::VariableEnd : Token::Type::BlockEnd, "", line_of(pos_)});
                    const size_t close_end = pos_ + close.size() + (strip || keep ? 1 : 0);
                    if (kind == '{') {
                        pos_ = strip ? skip_whitespace(src_, close_end) : close_end;
                        line_starting_ = src_[pos_ - 1] == '\n';
                    } else {
                        finish_block_end(close_end, strip ? '-' : (keep ? '+' : 0));
                    }
                    return;
                }
            }
            lex_expression_token(brackets);
        }
    }

    void lex_expression_token(std::vector<char>& brackets) {
        const int line = line_of(pos_);
        char32_t c;
        utf8_char_at(src_, pos_, &c);
        if (py_isspace(c)) {
            pos_ = skip_whitespace(src_, pos_);
            return;
        }
        const auto ch = static_cast<unsigned char>(src_[pos_]);
        if (std::isdigit(ch)) {
            if (const size_t len = match_float(src_, pos_)) {
                tokens_.push_back({Token::Type::Float, src_.substr(pos_, len), line});
                pos_ += len;
                return;
            }
            if (const size_t len = match_integer(src_, pos_)) {
                tokens_.push_back({Token::Type::Integer, src_.substr(pos_, len), line});
                pos_ += len;
                return;
            }
        }
        if (is_name_start(ch)) {
            size_t end = pos_;
            while (end < src_.size() && is_name_char(static_cast<unsigned char>(src_[end]))) ++end;
            tokens_.push_back({Token::Type::Name, src_.substr(pos_, end - pos_), line});
            pos_ = end;
            return;
        }
        if (ch == '\'' || ch == '"') {
            size_t end = pos_ + 1;
            while (end < src_.size() && src_[end] != static_cast<char>(ch)) end += src_[end] == '\\' ? 2 : 1;
            if (end >= src_.size()) syntax_error("unexpected char " + repr_char(c) + " at " + std::to_string(pos_), line);
            tokens_.push_back({Token::Type::String, unescape_literal(std::string_view(src_).substr(pos_ + 1, end - pos_ - 1), line), line});
            pos_ = end + 1;
            return;
        }
        for (std::string_view op : kTwoCharOperators)
            if (starts_with(src_, pos_, op)) {
                tokens_.push_back({Token::Type::Operator, std::string(op), line});
                pos_ += 2;
                return;
            }
        if (kOneCharOperators.find(static_cast<char>(ch)) != std::string_view::npos) {
            const char op = static_cast<char>(ch);
            if (op == '(' || op == '[' || op == '{') {
                brackets.push_back(op == '(' ? ')' : (op == '[' ? ']' : '}'));
            } else if (op == ')' || op == ']' || op == '}') {
                if (brackets.empty()) syntax_error(std::string("unexpected '") + op + "'", line);
                if (brackets.back() != op)
                    syntax_error(std::string("unexpected '") + op + "', expected '" + brackets.back() + "'", line);
                brackets.pop_back();
            }
            tokens_.push_back({Token::Type::Operator, std::string(1, op), line});
            ++pos_;
            return;
        }
        syntax_error("unexpected char " + repr_char(c) + " at " + std::to_string(pos_), line);
    }

    static std::string repr_char(char32_t c) {
        std::string s;
        append_utf8(s, c);
        return repr_string(s);
    }

    std::string src_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    size_t line_pos_ = 0;
    int line_ = 1;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace k3::jinja
