#include "jinja/strings.h"

#include <algorithm>
#include <stdexcept>

namespace k3::jinja {

std::u32string utf8_decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        int extra = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
        if (extra < 0 || i + extra >= s.size()) {
            out.push_back(0xFFFD);
            ++i;
            continue;
        }
        char32_t c = extra == 0 ? b : (b & (0x3F >> extra));
        bool ok = true;
        for (int k = 1; k <= extra; ++k) {
            const auto cont = static_cast<unsigned char>(s[i + k]);
            if ((cont & 0xC0) != 0x80) {
                ok = false;
                break;
            }
            c = (c << 6) | (cont & 0x3F);
        }
        if (!ok) {
            out.push_back(0xFFFD);
            ++i;
            continue;
        }
        out.push_back(c);
        i += extra + 1;
    }
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

std::string utf8_encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) append_utf8(out, c);
    return out;
}

int64_t utf8_length(std::string_view s) {
    int64_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

size_t utf8_char_at(std::string_view s, size_t pos, char32_t* c) {
    const auto b = static_cast<unsigned char>(s[pos]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos + n > s.size()) {
        *c = 0xFFFD;
        return 1;
    }
    const std::u32string decoded = utf8_decode(s.substr(pos, n));
    *c = decoded.size() == 1 ? decoded[0] : 0xFFFD;
    return decoded.size() == 1 ? n : 1;
}

bool py_isspace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_isprintable(char32_t c) {
    if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
    if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
        (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF)
        return false;
    if ((c >= 0xD800 && c <= 0xDFFF) || (c >= 0xE000 && c <= 0xF8FF) ||
        c > 0x10FFFF || (c & 0xFFFE) == 0xFFFE)
        return false;
    return true;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right) {
    const std::u32string text = utf8_decode(s);
    const std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
    auto strip_it = [&](char32_t c) {
        return chars ? set.find(c) != std::u32string::npos : py_isspace(c);
    };
    size_t begin = 0, end = text.size();
    if (left)
        while (begin < end && strip_it(text[begin])) ++begin;
    if (right)
        while (end > begin && strip_it(text[end - 1])) --end;
    return utf8_encode(std::u32string_view(text).substr(begin, end - begin));
}

namespace {

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit, bool from_right) {
    std::u32string text = utf8_decode(s);
    if (from_right) std::reverse(text.begin(), text.end());
    std::vector<std::u32string> parts;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && py_isspace(text[i])) ++i;
        if (i == text.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
            size_t end = text.size();
            while (end > i && py_isspace(text[end - 1])) --end;
            parts.push_back(text.substr(i, end - i));
            break;
        }
        size_t j = i;
        while (j < text.size() && !py_isspace(text[j])) ++j;
        parts.push_back(text.substr(i, j - i));
        i = j;
    }
    std::vector<std::string> out;
    for (auto& p : parts) {
        if (from_right) std::reverse(p.begin(), p.end());
        out.push_back(utf8_encode(p));
    }
    if (from_right) std::reverse(out.begin(), out.end());
    return out;
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit, bool from_right) {
    if (!sep) return split_whitespace(s, maxsplit, from_right);
    if (sep->empty()) throw std::invalid_argument("empty separator");
    std::vector<std::string> out;
    if (!from_right) {
        size_t pos = 0;
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            const size_t hit = s.find(*sep, pos);
            if (hit == std::string_view::npos) break;
            out.emplace_back(s.substr(pos, hit - pos));
            pos = hit + sep->size();
        }
        out.emplace_back(s.substr(pos));
        return out;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        if (end < sep->size()) break;
        const size_t hit = s.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement,
                       int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts the replacement before every character and at the end.
        const std::u32string text = utf8_decode(s);
        int64_t done = 0;
        for (char32_t c : text) {
            if (count < 0 || done < count) {
                out += replacement;
                ++done;
            }
            append_utf8(out, c);
        }
        if (count < 0 || done < count) out += replacement;
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t hit = s.find(old, pos);
        if (hit == std::string_view::npos) break;
        out += s.substr(pos, hit - pos);
        out += replacement;
        pos = hit + old.size();
        ++done;
    }
    out += s.substr(pos);
    return out;
}

int64_t py_count(std::string_view s, std::string_view sub) {
    if (sub.empty()) return utf8_length(s) + 1;
    int64_t n = 0;
    for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size()))
        ++n;
    return n;
}

namespace {

// Simple case mappings for ASCII, Latin-1, Greek and Cyrillic (what chat templates meet).
char32_t to_upper(char32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
    if (c == 0x3C2) return 0x3A3;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    return c;
}

char32_t to_lower(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    if (c == 0x178) return 0xFF;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    return c;
}

bool is_cased_letter(char32_t c) { return to_upper(c) != c || to_lower(c) != c; }

}  // namespace

std::string py_upper(std::string_view s) {
    std::u32string t = utf8_decode(s);
    for (char32_t& c : t) c = to_upper(c);
    return utf8_encode(t);
}

std::string py_lower(std::string_view s) {
    std::u32string t = utf8_decode(s);
    for (char32_t& c : t) c = to_lower(c);
    return utf8_encode(t);
}

std::string py_title(std::string_view s) {
    std::u32string t = utf8_decode(s);
    bool previous_cased = false;
    for (char32_t& c : t) {
        const bool cased = is_cased_letter(c);
        c = previous_cased ? to_lower(c) : to_upper(c);
        previous_cased = cased;
    }
    return utf8_encode(t);
}

std::string py_capitalize(std::string_view s) {
    std::u32string t = utf8_decode(s);
    for (size_t i = 0; i < t.size(); ++i) t[i] = i == 0 ? to_upper(t[i]) : to_lower(t[i]);
    return utf8_encode(t);
}

std::vector<int64_t> slice_indices(int64_t size, std::optional<int64_t> start,
                                   std::optional<int64_t> stop, std::optional<int64_t> step) {
    const int64_t st = step.value_or(1);
    if (st == 0) throw std::invalid_argument("slice step cannot be zero");
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
        if (!v) return fallback;
        int64_t x = *v < 0 ? *v + size : *v;
        if (st > 0) return std::clamp<int64_t>(x, 0, size);
        return std::clamp<int64_t>(x, -1, size - 1);
    };
    const int64_t b = clamp(start, st > 0 ? 0 : size - 1);
    const int64_t e = clamp(stop, st > 0 ? size : -1);
    std::vector<int64_t> out;
    for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(i);
    return out;
}

}  // namespace k3::jinja
