// UTF-8 validation helpers shared by the tokenizer and the streaming detokenizer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace k3::text {

// Length of the well-formed UTF-8 sequence at the start of `bytes` (1–4), or 0 if the bytes
// there are not a complete, well-formed sequence (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF). `bytes` must not be empty.
size_t utf8_sequence_length(std::string_view bytes);

// True if `bytes` (1–3 bytes) could still become a well-formed sequence when more bytes come.
bool utf8_is_incomplete_prefix(std::string_view bytes);

// Byte length of the longest well-formed prefix of `bytes`.
size_t utf8_valid_prefix_length(std::string_view bytes);

// Appends `bytes` to `out` with each ill-formed subsequence replaced by U+FFFD (one per maximal
// invalid prefix, as the Unicode standard recommends). With `hold_incomplete_tail`, a trailing
// sequence that more bytes could still complete is left unconsumed. Returns the bytes consumed.
size_t utf8_append_sanitized(std::string_view bytes, std::string& out, bool hold_incomplete_tail);

}  // namespace k3::text
