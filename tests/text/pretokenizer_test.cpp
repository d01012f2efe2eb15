// The kimi-k2 split on cases worked out by hand from the reference pattern (k3-architecture.md §10).
#include "text/pretokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error.h"

namespace k3::text {
namespace {

std::vector<std::string> split(std::string_view text) {
    static const auto pre = PreTokenizer::create("kimi-k2");
    std::vector<std::string> pieces;
    pre->split(text, [&](std::string_view piece) { pieces.emplace_back(piece); });
    return pieces;
}

using Pieces = std::vector<std::string>;

TEST(KimiK2PreTokenizer, SplitsAtCaseTransitions) {
    // Alternative 2 takes (upper)*(lower)+, so a new capital starts a new word (tiktoken's
    // semantics; llama.cpp's hand-written splitter keeps "HelloWorld" whole).
    EXPECT_EQ(split("HelloWorld"), (Pieces{"Hello", "World"}));
    EXPECT_EQ(split("XMLHttpRequest"), (Pieces{"XMLHttp", "Request"}));
    EXPECT_EQ(split("ABC"), (Pieces{"ABC"}));
}

TEST(KimiK2PreTokenizer, HanRunsUseScriptNotScriptExtensions) {
    // "。「」" are script Common (Han only in Script_Extensions): they are punctuation here.
    EXPECT_EQ(split("世界。「引用」"), (Pieces{"世界", "。「", "引用", "」"}));
    EXPECT_EQ(split("中文English混合"), (Pieces{"中文", "English", "混合"}));
}

TEST(KimiK2PreTokenizer, ContractionsAndLeadingPunctuation) {
    EXPECT_EQ(split("don't"), (Pieces{"don't"}));
    EXPECT_EQ(split("WE'LL go"), (Pieces{"WE'LL", " go"}));
    EXPECT_EQ(split("(foo"), (Pieces{"(foo"}));
    EXPECT_EQ(split("\nfoo"), (Pieces{"\n", "foo"}));  // CR/LF never lead a word
}

TEST(KimiK2PreTokenizer, CombiningMarksCountAsLetters) {
    EXPECT_EQ(split("cafe\u0301 ok"), (Pieces{"cafe\u0301", " ok"}));
}

TEST(KimiK2PreTokenizer, DigitsInGroupsOfThree) {
    EXPECT_EQ(split("1234567"), (Pieces{"123", "456", "7"}));
}

TEST(KimiK2PreTokenizer, WhitespaceRules) {
    EXPECT_EQ(split("a  b"), (Pieces{"a", " ", " b"}));          // \s+(?!\S) leaves one space to the word
    EXPECT_EQ(split("a \n\n b"), (Pieces{"a", " \n\n", " b"}));  // \s*[\r\n]+
    EXPECT_EQ(split("a\u0085\u0085b"), (Pieces{"a", "\u0085", "\u0085b"}));  // U+0085 is White_Space
    // U+180E is not White_Space (Rust's \s) since Unicode 6.3, though PCRE2's \s still has it.
    EXPECT_EQ(split("a\u180E\u180Eb"), (Pieces{"a", "\u180E\u180E", "b"}));
    EXPECT_EQ(split("end  "), (Pieces{"end", "  "}));
}

TEST(KimiK2PreTokenizer, IllFormedBytesStandAlone) {
    EXPECT_EQ(split("ab\xFF" "cd"), (Pieces{"ab", "\xFF", "cd"}));
    EXPECT_EQ(split("\xE4\xB8"), (Pieces{"\xE4", "\xB8"}));
}

TEST(KimiK2PreTokenizer, LongRunsAreOnePiece) {
    // Long words need a large JIT backtracking stack; it grows on demand.
    const std::string thai = [] {
        std::string s;
        for (int i = 0; i < 50000; ++i) s += "\u0E01";  // THAI CHARACTER KO KAI (Lo)
        return s;
    }();
    EXPECT_EQ(split(thai), (Pieces{thai}));
    const std::string letters(200000, 'x');
    EXPECT_EQ(split(letters), (Pieces{letters}));
    const std::string spaces(100000, ' ');
    EXPECT_EQ(split(spaces + "a"), (Pieces{std::string(99999, ' '), " a"}));
}

TEST(KimiK2PreTokenizer, OtherNamesAreUnsupported) {
    try {
        PreTokenizer::create("llama3");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'llama3' is not supported"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace k3::text
