#include "text/vocabulary.h"

#include <array>
#include <variant>

#include "gguf/gguf_file.h"
#include "util/error.h"

namespace k3::text {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to
// themselves; the other 68 bytes map, in byte order, to U+0100, U+0101, ...
struct ByteImages {
    std::array<uint32_t, 256> code_point_of{};
    std::array<int16_t, 512> byte_of{};  // every image is below U+0200; -1: no byte

    ByteImages() {
        byte_of.fill(-1);
        uint32_t extra = 0;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            code_point_of[b] = printable ? b : 256 + extra++;
            byte_of[code_point_of[b]] = static_cast<int16_t>(b);
        }
    }
};

const ByteImages& byte_images() {
    static const ByteImages images;
    return images;
}

void append_utf8(std::string& out, uint32_t cp) {  // cp < 0x800 here
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::optional<int32_t> optional_id(const gguf::GgufFile& file, std::string_view key, size_t n_vocab) {
    const auto id = file.get_int(key);
    if (!id) return std::nullopt;
    if (*id < 0 || static_cast<uint64_t>(*id) >= n_vocab)
        throw Error(file.path() + ": " + std::string(key) + " = " + std::to_string(*id) +
                    " is outside the vocabulary of " + std::to_string(n_vocab) + " tokens");
    return static_cast<int32_t>(*id);
}

}  // namespace

std::optional<std::string> gpt2_text_to_bytes(std::string_view text) {
    const ByteImages& images = byte_images();
    std::string bytes;
    bytes.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const auto lead = static_cast<uint8_t>(text[i]);
        uint32_t cp;
        if (lead < 0x80) {
            cp = lead;
            i += 1;
        } else if (lead >= 0xC2 && lead <= 0xDF && i + 1 < text.size() &&
                   (static_cast<uint8_t>(text[i + 1]) & 0xC0) == 0x80) {
            cp = ((lead & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
            i += 2;
        } else {
            return std::nullopt;  // a longer sequence: above every byte image
        }
        if (cp >= images.byte_of.size() || images.byte_of[cp] < 0) return std::nullopt;
        bytes += static_cast<char>(images.byte_of[cp]);
    }
    return bytes;
}

std::string gpt2_bytes_to_text(std::string_view bytes) {
    const ByteImages& images = byte_images();
    std::string text;
    text.reserve(bytes.size() * 2);
    for (char c : bytes) append_utf8(text, images.code_point_of[static_cast<uint8_t>(c)]);
    return text;
}

Vocabulary read_vocabulary(const gguf::GgufFile& file) {
    auto require_string = [&](std::string_view key) {
        auto value = file.get_string(key);
        if (!value) throw Error(file.path() + ": metadata key " + std::string(key) + " is missing");
        return *value;
    };
    Vocabulary vocab;
    vocab.model = require_string("tokenizer.ggml.model");
    vocab.pre_tokenizer = file.get_string("tokenizer.ggml.pre").value_or("default");
    // A vocabulary larger than the model's embedding or output is not this model's: refused
    // before its strings are decoded and indexed (a small file can hold millions of them).
    const gguf::Value* listed = file.find("tokenizer.ggml.tokens");
    if (listed && std::holds_alternative<gguf::Array>(listed->data)) {
        const uint64_t n_listed = std::get<gguf::Array>(listed->data).size();
        for (const char* name : {"token_embd.weight", "output.weight"}) {
            const gguf::TensorInfo* rows = file.find_tensor(name);
            if (rows && rows->ne.size() >= 2 && n_listed > static_cast<uint64_t>(rows->ne[1]))
                throw Error(file.path() + ": tokenizer.ggml.tokens lists " + std::to_string(n_listed) +
                            " tokens, more than the " + std::to_string(rows->ne[1]) + " rows of " + name);
        }
    }
    auto tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty())
        throw Error(file.path() + ": metadata key tokenizer.ggml.tokens is missing or empty");
    vocab.tokens = std::move(*tokens);
    const size_t n_vocab = vocab.tokens.size();

    if (auto types = file.get_int_array("tokenizer.ggml.token_type")) {
        if (types->size() != n_vocab)
            throw Error(file.path() + ": tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                        " entries, expected one per token (" + std::to_string(n_vocab) + ")");
        vocab.types.reserve(n_vocab);
        for (int64_t t : *types) {
            if (t < 0 || t > static_cast<int64_t>(TokenType::Byte))
                throw Error(file.path() + ": tokenizer.ggml.token_type holds unknown type " + std::to_string(t));
            vocab.types.push_back(static_cast<TokenType>(t));
        }
    } else {
        vocab.types.assign(n_vocab, TokenType::Normal);
    }
    vocab.merges = file.get_string_array("tokenizer.ggml.merges").value_or(std::vector<std::string>{});
    vocab.bos_id = optional_id(file, "tokenizer.ggml.bos_token_id", n_vocab);
    vocab.eos_id = optional_id(file, "tokenizer.ggml.eos_token_id", n_vocab);
    vocab.eot_id = optional_id(file, "tokenizer.ggml.eot_token_id", n_vocab);
    vocab.padding_id = optional_id(file, "tokenizer.ggml.padding_token_id", n_vocab);
    return vocab;
}

}  // namespace k3::text
