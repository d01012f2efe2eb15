#include "convert/hf_vocab.h"

#include <array>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "text/bpe.h"
#include "util/error.h"

namespace k3::convert {
namespace {

constexpr int32_t kNormal = 1, kControl = 3, kUnused = 5;

// Standard base64 (RFC 4648, with padding); nullopt if malformed.
std::optional<std::string> decode_base64(std::string_view text) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    if (text.empty() || text.size() % 4 != 0) return std::nullopt;
    std::string out;
    for (size_t i = 0; i < text.size(); i += 4) {
        uint32_t bits = 0;
        int padding = 0;
        for (size_t j = 0; j < 4; ++j) {
            const char c = text[i + j];
            if (c == '=' && i + 4 == text.size() && j >= 2) {
                ++padding;
                bits <<= 6;
                continue;
            }
            const int v = value(c);
            if (v < 0 || padding) return std::nullopt;
            bits = bits << 6 | uint32_t(v);
        }
        out += char(bits >> 16);
        if (padding < 2) out += char((bits >> 8) & 0xff);
        if (padding < 1) out += char(bits & 0xff);
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xc0 | cp >> 6);
        out += char(0x80 | (cp & 0x3f));
    } else {
        out += char(0xe0 | cp >> 12);
        out += char(0x80 | ((cp >> 6) & 0x3f));
        out += char(0x80 | (cp & 0x3f));
    }
}

// GPT-2's table: printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in order.
const std::array<uint32_t, 256>& byte_to_codepoint() {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
            t[b] = printable ? b : next++;
        }
        return t;
    }();
    return table;
}

}  // namespace

std::string gpt2_byte_image(std::string_view bytes) {
    std::string out;
    for (unsigned char b : bytes) append_utf8(out, byte_to_codepoint()[b]);
    return out;
}

Vocabulary read_tiktoken_vocabulary(const std::string& dir, int64_t vocab_size) {
    const std::string ranks_path = dir + "/tiktoken.model";
    std::ifstream in(ranks_path, std::ios::binary);
    if (!in) throw Error(ranks_path + ": cannot open");
    std::vector<std::string> rank_bytes;  // index = rank
    std::unordered_map<std::string, uint32_t> rank_of;
    std::string line;
    for (int64_t line_number = 1; std::getline(in, line); ++line_number) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        const size_t space = line.find(' ');
        const std::string where = ranks_path + ":" + std::to_string(line_number);
        if (space == std::string::npos) throw Error(where + ": expected \"BASE64 RANK\"");
        std::optional<std::string> bytes = decode_base64(std::string_view(line).substr(0, space));
        if (!bytes) throw Error(where + ": the token is not valid base64");
        const std::string rank_text = line.substr(space + 1);
        if (rank_text.empty() || rank_text.find_first_not_of("0123456789") != std::string::npos || rank_text.size() > 9)
            throw Error(where + ": the rank \"" + rank_text + "\" is not a number");
        const uint32_t rank = uint32_t(std::stoul(rank_text));
        if (rank != rank_bytes.size()) throw Error(where + ": rank " + rank_text + " out of order (expected " + std::to_string(rank_bytes.size()) + ")");
        if (!rank_of.emplace(*bytes, rank).second) throw Error(where + ": the token repeats an earlier rank's bytes");
        rank_bytes.push_back(std::move(*bytes));
    }
    if (int64_t(rank_bytes.size()) > vocab_size)
        throw Error(ranks_path + ": " + std::to_string(rank_bytes.size()) + " ranks exceed vocab_size " + std::to_string(vocab_size));

    const std::string config_path = dir + "/tokenizer_config.json";
    std::map<int64_t, std::string> specials;
    std::ifstream config_in(config_path, std::ios::binary);
    if (!config_in) throw Error(config_path + ": cannot open");
    try {
        const nlohmann::json config = nlohmann::json::parse(config_in);
        if (config.contains("added_tokens_decoder")) {
            for (const auto& [id_text, token] : config.at("added_tokens_decoder").items()) {
                const int64_t id = std::stoll(id_text);
                if (id < int64_t(rank_bytes.size()) || id >= vocab_size)
                    throw Error(config_path + ": added token id " + id_text + " is outside " + std::to_string(rank_bytes.size()) +
                                ".." + std::to_string(vocab_size - 1) + " (after the ranks, within vocab_size)");
                specials[id] = token.at("content").get<std::string>();
            }
        }
    } catch (const nlohmann::json::exception& e) {
        throw Error(config_path + ": " + e.what());
    } catch (const std::logic_error&) {  // std::stoll on a non-numeric id
        throw Error(config_path + ": added_tokens_decoder has a key that is not a token id");
    }

    Vocabulary v;
    v.tokens.reserve(size_t(vocab_size));
    for (int64_t id = 0; id < vocab_size; ++id) {
        if (id < int64_t(rank_bytes.size())) {
            v.tokens.push_back(gpt2_byte_image(rank_bytes[size_t(id)]));
            v.token_types.push_back(kNormal);
        } else if (auto special = specials.find(id); special != specials.end()) {
            v.tokens.push_back(special->second);
            v.token_types.push_back(kControl);
        } else {
            v.tokens.push_back("[PAD" + std::to_string(id) + "]");
            v.token_types.push_back(kUnused);
        }
    }

    // Each multi-byte rank r is the merge of the two parts BPE makes of it with ranks < r.
    for (uint32_t r = 0; r < rank_bytes.size(); ++r) {
        const std::string& token = rank_bytes[r];
        if (token.size() < 2) continue;
        const text::RankLookup below_r = [&](std::string_view bytes) -> std::optional<uint32_t> {
            auto it = rank_of.find(std::string(bytes));
            if (it == rank_of.end() || it->second >= r) return std::nullopt;
            return it->second;
        };
        const std::vector<std::string_view> parts = text::bpe_split(token, below_r);
        if (parts.size() != 2)
            throw Error(ranks_path + ": rank " + std::to_string(r) + " is not the merge of two lower-ranked tokens (BPE gives " +
                        std::to_string(parts.size()) + " parts)");
        v.merges.push_back(gpt2_byte_image(parts[0]) + " " + gpt2_byte_image(parts[1]));
    }
    return v;
}

}  // namespace k3::convert
