// Differential test: k3's tokenizer against tiktoken (the reference tokenizer; the npm package
// runs the Rust crate as WASM) on thousands of generated strings. tiktoken is given the
// verbatim Kimi-K2 pattern and ranks read from the fixture GGUF by tests/node/tiktoken_oracle.cjs,
// which parses the file on its own. Skipped, with the reason, when node or the package is not
// installed (scripts/install-test-deps.sh installs it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "text/tokenizer.h"

namespace k3::text {
namespace {

std::string utf8(char32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xF0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// Fragments chosen to exercise each alternative of the pattern and the edges between them.
const std::vector<std::string>& fragments() {
    static const std::vector<std::string> list = {
        // words, case transitions, contractions (the 'ſ' folds to 's' case-insensitively)
        "hello", "Hello", "HELLO", "HelloWorld", "helloWorld", "ABCdef", "aBC", "iPhone", "XMLHttpRequest",
        "'s", "'S", "'t", "'re", "'RE", "'ve", "'m", "'ll", "'LL", "'d", "'D", "'x", "'ſ", "’s", "don't",
        "we'VE", "O'Neil", "rock'n'roll", "__init__", "snake_case", "kebab-case", "a.b.c", "x=1;",
        // digits of several scripts, number-like letters and symbols
        "1", "12", "123", "1234", "12345678901234567890", "3.14", "1,000", "１２３", "٣٤٥", "²", "½", "Ⅻ",
        "0x1F", "v2",
        // whitespace, including Unicode spaces and lone CR
        " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n", "\t\n ", "\x0B", "\x0C",
        "\u00A0", "\u0085", "\u2028", "\u3000", "\u1680", "\u202F", "\u200B", "\u2003", "\u180E",
        // punctuation and symbols
        ".", "...", ",", "!", "?!", "(", ")", "[", "]", "{", "}", "<", ">", "\"", "'", "`", "-", "--",
        "—", "«", "»", "“", "”", "·", "@", "#", "$", "%", "^", "&", "*", "+", "=", "|", "\\", "/", "~",
        "€", "©", "→", "∑", "√",
        // Han (script Han: ideographs, 々 Lm, 〇 Nl, ⺀ So, an Extension B ideograph) and CJK
        // punctuation, which is script Common but Han in Script_Extensions
        "世界", "中文", "漢字", "今日", "々", "〇", "⺀", "𠀀", "。", "「", "」", "、", "，", "！", "？", "〜",
        // other scripts
        "ひらがな", "カタカナ", "ー", "한국어", "Привет", "МИР", "Γειά", "ΚΌΣΜΕ", "ǅ", "ǈ", "مرحبا", "שלום",
        "नमस्ते", "ไทย", "ʰ", "ª", "µ", "ß", "İ", "ﬁ",
        // combining marks in and out of words
        "e\u0301", "a\u0308", "\u0301", "\u0301x", "x\u0301\u0302", "\u20DD", "\u0903",
        // emoji: plain, skin tone, ZWJ sequence, flag, keycap, variation selector
        "🙂", "👍🏽", "👨\u200D👩\u200D👧", "🇫🇷", "1\uFE0F\u20E3", "❤\uFE0F",
        // special-token texts and near misses
        "<|open|>", "<|sep|>", "<|close|>", "<|end_of_msg|>", "[BOS]", "[EOS]", "[PAD]", "[PAD1020]",
        "<|end_of", "<|reserved_token_3|>", "<|kimi_image_placeholder|>",
    };
    return list;
}

// A random code point from the assigned planes (surrogates excluded): whatever the fragments
// above forgot.
std::string random_code_point(std::mt19937& rng) {
    std::uniform_int_distribution<int> plane(0, 9);
    char32_t cp;
    if (plane(rng) < 8) {
        do cp = std::uniform_int_distribution<char32_t>(0x20, 0xFFFD)(rng); while (cp >= 0xD800 && cp <= 0xDFFF);
    } else {
        cp = std::uniform_int_distribution<char32_t>(0x10000, 0x2FFFF)(rng);
    }
    return utf8(cp);
}

std::vector<std::string> generate_strings(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    const auto& parts = fragments();
    std::uniform_int_distribution<size_t> pick(0, parts.size() - 1), length(1, 14);
    std::uniform_int_distribution<int> kind(0, 9);
    std::vector<std::string> strings;
    for (size_t i = 0; i < count; ++i) {
        std::string s;
        for (size_t n = length(rng); n > 0; --n) s += kind(rng) == 0 ? random_code_point(rng) : parts[pick(rng)];
        strings.push_back(std::move(s));
    }
    return strings;
}

TEST(TokenizerDifferential, MatchesTiktokenOnGeneratedStrings) {
    const std::string node_dir = std::string(K3_SOURCE_DIR) + "/tests/node";
    if (std::system("node --version > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "node is not installed (scripts/install-deps.sh installs nodejs)";
    if (!std::filesystem::exists(node_dir + "/node_modules/tiktoken/package.json"))
        GTEST_SKIP() << "the npm package tiktoken is not installed (run scripts/install-test-deps.sh)";

    const std::string model = k3::testing::fixture("tiny-k3/model.gguf");
    const auto strings = generate_strings(3000, 20261130);
    k3::testing::ScratchDir scratch;
    const std::string in = scratch.file("strings.json"), out = scratch.file("tiktoken.json");
    const std::string json = nlohmann::json(strings).dump();
    k3::testing::write_bytes(in, json.data(), json.size());
    const std::string command = "node '" + node_dir + "/tiktoken_oracle.cjs' '" + model + "' '" + in + "' '" + out + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const auto reference = nlohmann::json::parse(k3::testing::read_text(out));
    ASSERT_EQ(reference.size(), strings.size());

    const auto file = gguf::GgufFile::open(model);
    const Tokenizer tok = Tokenizer::from_gguf(*file);
    size_t mismatches = 0;
    for (size_t i = 0; i < strings.size() && mismatches < 10; ++i) {
        const auto ids = tok.encode(strings[i], false), special = tok.encode(strings[i], true);
        const bool ok = ids == reference[i]["ids"].get<std::vector<int32_t>>() &&
                        special == reference[i]["ids_parse_special"].get<std::vector<int32_t>>();
        if (!ok) ++mismatches;
        EXPECT_TRUE(ok) << "string " << i << ": " << nlohmann::json(strings[i]).dump() << "\n  k3:       "
                        << nlohmann::json(ids).dump() << "\n  tiktoken: " << reference[i]["ids"].dump()
                        << "\n  k3 (special):       " << nlohmann::json(special).dump()
                        << "\n  tiktoken (special): " << reference[i]["ids_parse_special"].dump();
        ASSERT_EQ(tok.decode(ids), strings[i]);
    }
}

}  // namespace
}  // namespace k3::text
