// Token masking over a vocabulary trie against a token-by-token check written independently:
// a token is allowed exactly when a fresh matcher fed the text so far plus the token accepts.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"
#include "grammar/token_constraint.h"
#include "grammar/token_trie.h"
#include "util/error.h"

namespace k3::grammar {
namespace {

std::vector<std::string> small_vocabulary() {
    std::vector<std::string> v;
    for (int b = 0; b < 256; ++b) v.push_back(std::string(1, char(b)));
    for (const char* t : {"ab", "abc", "true", "tr", "false", "null", "{\"", "\":", "\"}", "12", "1.5", "é", "\xC3",
                          "\xA9x", "€", "\xE2\x82", "  ", "\n", "\"a", "a\"", ""})
        v.push_back(t);
    return v;
}

void expect_mask_matches_brute_force(const std::string& gbnf, const std::string& prefix) {
    const auto grammar = parse_gbnf(gbnf);
    const std::vector<std::string> vocab = small_vocabulary();
    const TokenTrie trie(vocab);
    Matcher matcher(grammar);
    ASSERT_TRUE(matcher.accept(prefix));
    std::vector<uint8_t> allowed;
    matcher.allowed_tokens(trie, allowed);
    ASSERT_EQ(allowed.size(), vocab.size());
    for (size_t id = 0; id < vocab.size(); ++id) {
        Matcher fresh(grammar);
        const bool expected = !vocab[id].empty() && fresh.accept(prefix + vocab[id]);
        EXPECT_EQ(bool(allowed[id]), expected) << "token " << id << " after '" << prefix << "'";
    }
}

TEST(TokenMask, AgreesWithFeedingEachToken) {
    const std::string json = "root ::= \"{\\\"\" [a-z]+ \"\\\":\" (\"true\" | \"false\" | [0-9]+ (\".\" [0-9]+)?) \"}\"\n";
    for (const char* prefix : {"", "{\"", "{\"ab", "{\"ab\":", "{\"ab\":1", "{\"ab\":1."})
        expect_mask_matches_brute_force(json, prefix);
    const std::string unicode = "root ::= (\"é\" | \"€\" | [a-c])+\n";
    for (const char* prefix : {"", "\xC3", "a\xE2", "a\xE2\x82"}) expect_mask_matches_brute_force(unicode, prefix);
}

TEST(TokenMask, NoTokenLeadsWhereNothingCanFollow) {
    // Bytes that can only begin a surrogate (ED A0) or an overlong form (E0 80, C0) are no
    // start of a code point, however wide the class: a token of them would be a dead end.
    const auto grammar = parse_gbnf("root ::= [^\"]* \"\\\"\"\n");
    const std::vector<std::string> vocab = {"\xED", "\xED\xA0", "\xED\x9F", "\xE0\x80", "\xC0", "\xE0\xA0", "a", "\""};
    const TokenTrie trie(vocab);
    Matcher matcher(grammar);
    std::vector<uint8_t> allowed;
    matcher.allowed_tokens(trie, allowed);
    EXPECT_EQ(allowed, (std::vector<uint8_t>{1, 0, 1, 0, 0, 1, 1, 1}));
}

TEST(TokenMask, SymbolTokensMatchOnlyTheirOwnCodePoint) {
    // Token 1 is a control token standing for \U00110000, token 2 ends generation.
    auto vocabulary = std::make_shared<const TokenVocabulary>(std::vector<std::string>{"a", "", "", "b"}, std::vector<int32_t>{2},
                                                              std::vector<TokenVocabulary::Symbol>{{1, 0x110000}});
    auto mask = [](TokenConstraint& constraint) {
        std::vector<float> logits(4, 0.0f);
        constraint.mask(logits);
        std::vector<int> allowed;
        for (float l : logits) allowed.push_back(l == 0.0f);
        return allowed;
    };
    TokenConstraint exact(parse_gbnf("root ::= \"a\" \"\\U00110000\" \"b\"?"), vocabulary);
    EXPECT_EQ(mask(exact), (std::vector<int>{1, 0, 0, 0}));
    exact.accept(0);
    EXPECT_EQ(mask(exact), (std::vector<int>{0, 1, 0, 0}));
    exact.accept(1);
    EXPECT_EQ(mask(exact), (std::vector<int>{0, 0, 1, 1}));  // end, or the optional "b"
    // '.' and negated classes match text only, never a control token.
    TokenConstraint any(parse_gbnf("root ::= .*"), vocabulary);
    EXPECT_EQ(mask(any), (std::vector<int>{1, 0, 1, 1}));
    EXPECT_THROW(any.accept(1), Error);
}

TEST(TokenMask, RandomWalksStayInsideTheGrammar) {
    const std::string gbnf = "root ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= \"true\" | \"null\" | [0-9]+ | \"\\\"\" [a-c]* \"\\\"\"\n";
    const auto grammar = parse_gbnf(gbnf);
    const std::vector<std::string> vocab = small_vocabulary();
    const TokenTrie trie(vocab);
    std::mt19937 rng(5);
    for (int walk = 0; walk < 30; ++walk) {
        Matcher matcher(grammar);
        std::string text;
        std::vector<uint8_t> allowed;
        while (!matcher.must_end() && text.size() < 200) {
            matcher.allowed_tokens(trie, allowed);
            std::vector<size_t> ids;
            for (size_t i = 0; i < allowed.size(); ++i)
                if (allowed[i]) ids.push_back(i);
            ASSERT_FALSE(ids.empty()) << text;
            const size_t id = ids[rng() % ids.size()];
            ASSERT_TRUE(matcher.accept(vocab[id]));
            text += vocab[id];
            if (matcher.can_end() && rng() % 4 == 0) break;
        }
        if (!matcher.can_end()) continue;  // stopped by length
        Matcher check(grammar);
        EXPECT_TRUE(check.accept(text) && check.can_end()) << text;
        EXPECT_EQ(text.front(), '[');
        EXPECT_EQ(text.back(), ']');
    }
}

}  // namespace
}  // namespace k3::grammar
