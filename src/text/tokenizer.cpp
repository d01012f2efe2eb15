#include "text/tokenizer.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>

#include "gguf/gguf_file.h"
#include "text/bpe.h"
#include "text/pretokenizer.h"
#include "text/utf8.h"
#include "util/error.h"

namespace k3::text {
namespace {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using BytesToId = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// K3 ends a turn with these, whatever the GGUF's eos id says (k3-architecture.md §10, §13).
constexpr std::string_view kEndOfGenerationTexts[] = {"<|end_of_msg|>", "[EOS]", "[EOT]"};

std::string token_label(int32_t id, const std::string& text) {
    return "tokenizer.ggml.tokens[" + std::to_string(id) + "] '" + text + "'";
}

}  // namespace

struct Tokenizer::Impl {
    Vocabulary vocab;
    std::unique_ptr<PreTokenizer> pre_tokenizer;
    std::vector<std::string> bytes_of;  // [n_vocab] what each token decodes to
    // Normal tokens by their bytes. The id is also the BPE rank: K3's vocabulary is tiktoken's,
    // whose ranks are the ids (checked against the merges below).
    BytesToId normal_ids;
    std::array<int32_t, 256> byte_ids{};
    std::vector<std::vector<int32_t>> specials_by_first_byte{256};  // longest text first
    std::vector<int32_t> end_of_generation;
    RankLookup rank_of;

    void index_tokens() {
        const auto n = static_cast<int32_t>(vocab.tokens.size());
        bytes_of.resize(static_cast<size_t>(n));
        normal_ids.reserve(static_cast<size_t>(n));
        byte_ids.fill(-1);
        for (int32_t id = 0; id < n; ++id) {
            const std::string& text = vocab.tokens[static_cast<size_t>(id)];
            switch (vocab.types[static_cast<size_t>(id)]) {
                case TokenType::Normal: {
                    auto bytes = gpt2_text_to_bytes(text);
                    if (!bytes || bytes->empty())
                        throw Error(token_label(id, text) + " is not a byte-level (GPT-2 bytes_to_unicode) token");
                    if (bytes->size() == 1 && byte_ids[static_cast<uint8_t>((*bytes)[0])] < 0)
                        byte_ids[static_cast<uint8_t>((*bytes)[0])] = id;
                    normal_ids.emplace(*bytes, id);
                    bytes_of[static_cast<size_t>(id)] = std::move(*bytes);
                    break;
                }
                case TokenType::Control:
                case TokenType::UserDefined:
                    bytes_of[static_cast<size_t>(id)] = text;
                    if (!text.empty()) specials_by_first_byte[static_cast<uint8_t>(text[0])].push_back(id);
                    break;
                default:
                    bytes_of[static_cast<size_t>(id)] = text;
                    break;
            }
        }
        for (int b = 0; b < 256; ++b)
            if (byte_ids[static_cast<size_t>(b)] < 0)
                throw Error("tokenizer.ggml.tokens has no token for byte " + std::to_string(b) +
                            ": a byte-level BPE needs all 256");
        for (auto& bucket : specials_by_first_byte)
            std::stable_sort(bucket.begin(), bucket.end(), [&](int32_t a, int32_t b) {
                return bytes_of[static_cast<size_t>(a)].size() > bytes_of[static_cast<size_t>(b)].size();
            });
    }

    // Rank = id is only right if the merges (the converter's derivation of tiktoken's ranks)
    // produce tokens in increasing id order.
    void check_merges_follow_ids() const {
        int32_t previous = -1;
        for (size_t i = 0; i < vocab.merges.size(); ++i) {
            const std::string& merge = vocab.merges[i];
            const size_t space = merge.find(' ', 1);
            std::optional<std::string> bytes;
            if (space != std::string::npos)
                bytes = gpt2_text_to_bytes(merge.substr(0, space) + merge.substr(space + 1));
            auto it = bytes ? normal_ids.find(*bytes) : normal_ids.end();
            if (it == normal_ids.end())
                throw Error("tokenizer.ggml.merges[" + std::to_string(i) + "] '" + merge +
                            "' does not make a normal token of the vocabulary");
            if (it->second <= previous)
                throw Error("tokenizer.ggml.merges[" + std::to_string(i) + "] '" + merge + "' makes token " +
                            std::to_string(it->second) + ", not above the previous merge's " +
                            std::to_string(previous) + ": the vocabulary's ids are not its BPE ranks");
            previous = it->second;
        }
    }

    void collect_end_of_generation() {
        for (auto id : {vocab.eos_id, vocab.eot_id})
            if (id) end_of_generation.push_back(*id);
        for (std::string_view text : kEndOfGenerationTexts)
            for (int32_t id : specials_by_first_byte[static_cast<uint8_t>(text[0])])
                if (bytes_of[static_cast<size_t>(id)] == text) end_of_generation.push_back(id);
        std::sort(end_of_generation.begin(), end_of_generation.end());
        end_of_generation.erase(std::unique(end_of_generation.begin(), end_of_generation.end()),
                                end_of_generation.end());
    }

    void encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
        // tiktoken looks the whole piece up first.
        if (auto it = normal_ids.find(piece); it != normal_ids.end()) {
            out.push_back(it->second);
            return;
        }
        for (std::string_view part : bpe_split(piece, rank_of)) {
            if (part.size() == 1) {
                out.push_back(byte_ids[static_cast<uint8_t>(part[0])]);
            } else {
                out.push_back(normal_ids.find(part)->second);  // a merged part is a token
            }
        }
    }

    void encode_ordinary(std::string_view text, std::vector<int32_t>& out) const {
        pre_tokenizer->split(text, [&](std::string_view piece) { encode_piece(piece, out); });
    }

    // The longest special token whose text starts at text[at], if any.
    std::optional<int32_t> special_at(std::string_view text, size_t at) const {
        for (int32_t id : specials_by_first_byte[static_cast<uint8_t>(text[at])])
            if (text.substr(at).starts_with(bytes_of[static_cast<size_t>(id)])) return id;
        return std::nullopt;
    }
};

Tokenizer::Tokenizer(Vocabulary vocab) : impl_(std::make_unique<Impl>()) {
    if (vocab.model != "gpt2")
        throw Error("tokenizer.ggml.model '" + vocab.model + "' is not supported (supported: gpt2, byte-level BPE)");
    if (vocab.types.size() != vocab.tokens.size())
        throw Error("tokenizer.ggml.token_type has " + std::to_string(vocab.types.size()) +
                    " entries for " + std::to_string(vocab.tokens.size()) + " tokens");
    impl_->pre_tokenizer = PreTokenizer::create(vocab.pre_tokenizer);
    impl_->vocab = std::move(vocab);
    impl_->index_tokens();
    impl_->check_merges_follow_ids();
    impl_->collect_end_of_generation();
    const BytesToId& ids = impl_->normal_ids;
    impl_->rank_of = [&ids](std::string_view bytes) -> std::optional<uint32_t> {
        auto it = ids.find(bytes);
        if (it == ids.end()) return std::nullopt;
        return static_cast<uint32_t>(it->second);
    };
}

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
    try {
        return Tokenizer(read_vocabulary(file));
    } catch (const Error& e) {
        throw Error(file.path() + ": " + e.what());
    }
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

int32_t Tokenizer::n_vocab() const { return static_cast<int32_t>(impl_->vocab.tokens.size()); }
const Vocabulary& Tokenizer::vocabulary() const { return impl_->vocab; }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
    std::vector<int32_t> ids;
    if (!parse_special) {
        impl_->encode_ordinary(text, ids);
        return ids;
    }
    size_t segment_start = 0;
    for (size_t at = 0; at < text.size();) {
        auto special = impl_->special_at(text, at);
        if (!special) {
            ++at;
            continue;
        }
        impl_->encode_ordinary(text.substr(segment_start, at - segment_start), ids);
        ids.push_back(*special);
        at += impl_->bytes_of[static_cast<size_t>(*special)].size();
        segment_start = at;
    }
    impl_->encode_ordinary(text.substr(segment_start), ids);
    return ids;
}

std::string_view Tokenizer::token_bytes(int32_t id, bool render_special) const {
    if (id < 0 || id >= n_vocab())
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                    std::to_string(n_vocab() - 1) + ")");
    switch (impl_->vocab.types[static_cast<size_t>(id)]) {
        case TokenType::Normal:
        case TokenType::UserDefined:
            return impl_->bytes_of[static_cast<size_t>(id)];
        case TokenType::Control:
        case TokenType::Unknown:
            return render_special ? std::string_view(impl_->bytes_of[static_cast<size_t>(id)]) : std::string_view();
        default:
            return {};
    }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
    std::string out;
    for (int32_t id : ids) out += token_bytes(id, render_special);
    return out;
}

std::string_view Tokenizer::special_text_at(std::string_view text, size_t at) const {
    if (at >= text.size()) return {};
    const auto special = impl_->special_at(text, at);
    return special ? std::string_view(impl_->bytes_of[static_cast<size_t>(*special)]) : std::string_view();
}

std::optional<int32_t> Tokenizer::special_id(std::string_view text) const {
    if (text.empty()) return std::nullopt;
    for (int32_t id : impl_->specials_by_first_byte[static_cast<uint8_t>(text[0])])
        if (impl_->bytes_of[static_cast<size_t>(id)] == text) return id;
    return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
    return id >= 0 && id < n_vocab() && impl_->vocab.types[static_cast<size_t>(id)] != TokenType::Normal;
}

const std::vector<int32_t>& Tokenizer::end_of_generation_ids() const { return impl_->end_of_generation; }

bool Tokenizer::is_end_of_generation(int32_t id) const {
    return std::binary_search(impl_->end_of_generation.begin(), impl_->end_of_generation.end(), id);
}

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer), render_special_(render_special) {}

std::string StreamingDetokenizer::push(int32_t id) {
    pending_ += tokenizer_->token_bytes(id, render_special_);
    std::string out;
    pending_.erase(0, utf8_append_sanitized(pending_, out, /*hold_incomplete_tail=*/true));
    return out;
}

std::string StreamingDetokenizer::finish() {
    std::string out;
    utf8_append_sanitized(pending_, out, /*hold_incomplete_tail=*/false);
    pending_.clear();
    return out;
}

}  // namespace k3::text
