// The K3 vocabulary from a checkpoint's tiktoken.model (base64 token + rank per line) and
// tokenizer_config.json (added special tokens), as GGUF's gpt2-style tokenizer keys
// (k3-architecture.md §1.3, §10): tokens are GPT-2 byte-to-unicode images of the rank bytes,
// specials their literal text; merges are derived from the ranks, in rank order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::convert {

struct Vocabulary {
    std::vector<std::string> tokens;      // index = token id
    std::vector<int32_t> token_types;     // 1 normal, 3 control (special), 5 unused filler
    std::vector<std::string> merges;      // "left right", in rank order
};

// `vocab_size` from config.json: ids with neither a rank nor a special token become
// "[PAD<id>]" fillers of type unused. Throws k3::Error naming the file and line.
Vocabulary read_tiktoken_vocabulary(const std::string& checkpoint_dir, int64_t vocab_size);

// GPT-2's byte-to-unicode image of a byte string (UTF-8), as stored in tokenizer.ggml.tokens.
std::string gpt2_byte_image(std::string_view bytes);

}  // namespace k3::convert
