// Python's str operations on UTF-8 text: code points, str.isspace, strip, split, replace,
// case mapping and slicing. Strings stay UTF-8; these decode only where Python counts
// characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3::jinja {

std::u32string utf8_decode(std::string_view s);  // invalid bytes decode as U+FFFD
void append_utf8(std::string& out, char32_t c);
std::string utf8_encode(std::u32string_view s);
int64_t utf8_length(std::string_view s);
// Byte length of the code point starting at pos (1 for an invalid byte) and its value.
size_t utf8_char_at(std::string_view s, size_t pos, char32_t* c);

bool py_isspace(char32_t c);  // str.isspace() (and regex \s)
bool py_isprintable(char32_t c);

// str.strip / lstrip / rstrip; chars unset strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
// str.split / rsplit; sep unset splits on runs of whitespace.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit, bool from_right);
std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement,
                       int64_t count);
int64_t py_count(std::string_view s, std::string_view sub);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);

// The indices slice(start, stop, step) selects from a sequence of `size` (Python's rules).
std::vector<int64_t> slice_indices(int64_t size, std::optional<int64_t> start,
                                   std::optional<int64_t> stop, std::optional<int64_t> step);

}  // namespace k3::jinja
