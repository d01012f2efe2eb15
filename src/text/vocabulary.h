// A tokenizer vocabulary as a GGUF stores it (tokenizer.ggml.*), independent of the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3::gguf {
class GgufFile;
}

namespace k3::text {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

struct Vocabulary {
    std::string model;                 // tokenizer.ggml.model, e.g. "gpt2"
    std::string pre_tokenizer;         // tokenizer.ggml.pre, e.g. "kimi-k2"
    std::vector<std::string> tokens;   // [n_vocab] token text as stored (see token_bytes)
    std::vector<TokenType> types;      // [n_vocab]
    std::vector<std::string> merges;   // "LEFT RIGHT" in rank order; may be empty
    std::optional<int32_t> bos_id, eos_id, eot_id, padding_id;
};

// Reads tokenizer.ggml.* from a GGUF. Throws k3::Error naming the key when one is missing or
// inconsistent (e.g. token_type of another length than tokens).
Vocabulary read_vocabulary(const gguf::GgufFile& file);

// The bytes a byte-level token stands for: GPT-2's bytes_to_unicode maps every byte to one
// printable code point, and a token's text is the image of its bytes. nullopt if `text`
// contains a code point that is no byte's image.
std::optional<std::string> gpt2_text_to_bytes(std::string_view text);

// The inverse: the stored text of a token made of `bytes`.
std::string gpt2_bytes_to_text(std::string_view bytes);

}  // namespace k3::text
