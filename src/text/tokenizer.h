// K3's tokenizer: tiktoken-style byte-level BPE over a GGUF vocabulary, with the kimi-k2
// pre-tokenizer, special-token parsing on request, decoding and streaming decoding.
//
//   auto tok = k3::text::Tokenizer::from_gguf(file);
//   std::vector<int32_t> ids = tok.encode("Hello", /*parse_special=*/false);
//   std::string bytes = tok.decode(ids);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/vocabulary.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::text {

class Tokenizer {
public:
    // Throws k3::Error if the vocabulary is not a byte-level BPE ("gpt2") with a supported
    // pre-tokenizer, or is inconsistent (a normal token that is not a byte string image, merges
    // whose results are not in id order, a missing single-byte token).
    explicit Tokenizer(Vocabulary vocab);
    static Tokenizer from_gguf(const gguf::GgufFile& file);
    ~Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;

    int32_t n_vocab() const;
    const Vocabulary& vocabulary() const;

    // Token ids of `text` (arbitrary bytes; ill-formed UTF-8 is encoded byte by byte). Special
    // tokens are recognised in the text only with `parse_special`; otherwise their text is
    // ordinary bytes, which is what user content must always get. No BOS is added.
    std::vector<int32_t> encode(std::string_view text, bool parse_special = false) const;

    // The bytes of one token. Control tokens give their text only with `render_special`;
    // unused slots give nothing. Throws k3::Error for an id outside the vocabulary.
    std::string_view token_bytes(int32_t id, bool render_special = true) const;
    // Concatenated token bytes; may end inside a UTF-8 sequence (see StreamingDetokenizer).
    std::string decode(std::span<const int32_t> ids, bool render_special = true) const;

    // The text of the special token that `encode(..., parse_special=true)` would recognise at
    // byte `at` of `text`, or an empty view if none starts there.
    std::string_view special_text_at(std::string_view text, size_t at) const;
    // The id of a control or user-defined token by its exact text, e.g. "<|end_of_msg|>".
    std::optional<int32_t> special_id(std::string_view text) const;
    bool is_special(int32_t id) const;  // control, user-defined, unknown or unused

    // Ids that end generation: the GGUF's eos and eot ids plus "<|end_of_msg|>", "[EOS]" and
    // "[EOT]" when the vocabulary has them (K3 ends a turn with <|end_of_msg|> whatever the
    // file's eos id says; early K3 GGUFs name [EOS]). Sorted.
    const std::vector<int32_t>& end_of_generation_ids() const;
    bool is_end_of_generation(int32_t id) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Turns a stream of ids into text that is always well-formed UTF-8: bytes of a character split
// across tokens are held until it is complete; ill-formed bytes become U+FFFD.
class StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = true);
    std::string push(int32_t id);  // the text completed by this token (possibly empty)
    std::string finish();          // what is left; an unfinished character becomes U+FFFD

private:
    const Tokenizer* tokenizer_;
    bool render_special_;
    std::string pending_;  // a trailing incomplete UTF-8 sequence (at most 3 bytes)
};

}  // namespace k3::text
