// GBNF parsing and matching against hand-written strings each grammar must accept or reject.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"
#include "util/error.h"

namespace k3::grammar {
namespace {

bool matches(const std::string& gbnf, const std::string& text) {
    Matcher matcher(parse_gbnf(gbnf));
    return matcher.accept(text) && matcher.can_end();
}

std::string parse_error(const std::string& gbnf) {
    try {
        parse_gbnf(gbnf);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Gbnf, LiteralsAndAlternatives) {
    const std::string g = R"(root ::= "yes" | "no" | "maybe")";
    EXPECT_TRUE(matches(g, "yes"));
    EXPECT_TRUE(matches(g, "maybe"));
    EXPECT_FALSE(matches(g, "ye"));
    EXPECT_FALSE(matches(g, "yesno"));
    EXPECT_FALSE(matches(g, ""));
}

TEST(Gbnf, RulesGroupsAndComments) {
    const std::string g = "# a list of answers\n"
                          "root ::= answer (\",\" answer)*   # trailing comment\n"
                          "answer ::= (\"a\" | \"b\")\n"
                          "           \"!\"\n";  // inside no parentheses: a new line ends the rule...
    EXPECT_NE(parse_error(g), "");                 // ...so the continuation line is not a rule
    const std::string ok = "root ::= answer (\",\"\n  answer)*\nanswer ::= \"a\" | \"b\"\n";
    EXPECT_TRUE(matches(ok, "a"));
    EXPECT_TRUE(matches(ok, "a,b,a"));
    EXPECT_FALSE(matches(ok, "a,"));
    EXPECT_FALSE(matches(ok, "ab"));
}

TEST(Gbnf, Repetitions) {
    EXPECT_TRUE(matches(R"(root ::= "a"*)", ""));
    EXPECT_TRUE(matches(R"(root ::= "a"*)", "aaaa"));
    EXPECT_FALSE(matches(R"(root ::= "a"+)", ""));
    EXPECT_TRUE(matches(R"(root ::= "a"+)", "aaa"));
    EXPECT_TRUE(matches(R"(root ::= "a"? "b")", "b"));
    EXPECT_TRUE(matches(R"(root ::= "a"? "b")", "ab"));
    EXPECT_FALSE(matches(R"(root ::= "a"? "b")", "aab"));
    const std::string bounded = R"(root ::= [0-9]{2,4})";
    EXPECT_FALSE(matches(bounded, "1"));
    EXPECT_TRUE(matches(bounded, "12"));
    EXPECT_TRUE(matches(bounded, "1234"));
    EXPECT_FALSE(matches(bounded, "12345"));
    EXPECT_TRUE(matches(R"(root ::= "ab"{3})", "ababab"));
    EXPECT_FALSE(matches(R"(root ::= "ab"{3})", "abab"));
    EXPECT_TRUE(matches(R"(root ::= "x"{2,} "y")", "xxxxxy"));
    EXPECT_FALSE(matches(R"(root ::= "x"{2,} "y")", "xy"));
}

TEST(Gbnf, CharacterClasses) {
    const std::string g = R"(root ::= [a-cx] [^0-9\n] [\x41-\x43] [\u00e9] .)";
    EXPECT_TRUE(matches(g, "bqB\xC3\xA9z"));
    EXPECT_TRUE(matches(g, "x!A\xC3\xA9\xE2\x82\xAC"));   // '.' takes a 3-byte code point
    EXPECT_FALSE(matches(g, "d!A\xC3\xA9z"));             // d outside [a-cx]
    EXPECT_FALSE(matches(g, "a5A\xC3\xA9z"));             // 5 inside the negated class
    EXPECT_FALSE(matches(g, "a\nA\xC3\xA9z"));
    EXPECT_FALSE(matches(g, "a!D\xC3\xA9z"));
    EXPECT_FALSE(matches(g, "a!Ae z"));
    EXPECT_TRUE(matches(R"(root ::= "\"\\\t" [\]\[])", "\"\\\t]"));
}

TEST(Gbnf, CodePointsSplitAcrossPieces) {
    Matcher m(parse_gbnf(R"(root ::= "é" "€")"));
    EXPECT_TRUE(m.accept("\xC3"));
    EXPECT_FALSE(m.can_end());
    EXPECT_FALSE(m.accept("\xC3"));  // a lead byte where a continuation byte must come
    EXPECT_TRUE(m.accept("\xA9\xE2\x82"));
    EXPECT_FALSE(m.accept("\xAD"));  // U+20AD, not U+20AC
    EXPECT_TRUE(m.accept("\xAC"));
    EXPECT_TRUE(m.must_end());
}

TEST(Gbnf, RejectedInputLeavesTheStateAlone) {
    Matcher m(parse_gbnf(R"(root ::= "abc")"));
    EXPECT_TRUE(m.accept("a"));
    EXPECT_FALSE(m.accept("bx"));
    EXPECT_TRUE(m.accept("bc"));
    EXPECT_TRUE(m.must_end());
}

TEST(Gbnf, RecursionNestsBrackets) {
    const std::string g = "root ::= item\nitem ::= \"(\" item* \")\" | \"x\"\n";
    EXPECT_TRUE(matches(g, "x"));
    EXPECT_TRUE(matches(g, "(x(x)(()))"));
    EXPECT_FALSE(matches(g, "(x"));
    EXPECT_FALSE(matches(g, "(x))"));
}

TEST(Gbnf, ErrorsNameTheProblemAndWhere) {
    EXPECT_EQ(parse_error("root ::= \"a\" foo\n"), "grammar: rule 'foo' is used at line 1, column 14 but never defined");
    EXPECT_EQ(parse_error("start ::= \"a\"\n"), "grammar: there is no rule named 'root'");
    EXPECT_EQ(parse_error("root ::= \"a\"\nroot ::= \"b\"\n"), "grammar: rule 'root' is defined twice at line 2, column 1");
    EXPECT_EQ(parse_error("root := \"a\""), "grammar: expected '::=' after rule name 'root' at line 1, column 6");
    EXPECT_EQ(parse_error("root ::= \"a"), "grammar: unexpected end of the grammar at line 1, column 12");
    EXPECT_EQ(parse_error("root ::= [z-a]"), "grammar: character range ends before it starts at line 1, column 14");
    EXPECT_EQ(parse_error("root ::= \"\\q\""), "grammar: unknown escape '\\q' at line 1, column 11");
    EXPECT_EQ(parse_error("root ::= * \"a\""), "grammar: '*' follows nothing it could repeat at line 1, column 10");
    EXPECT_EQ(parse_error("root ::= (\"a\""), "grammar: expected ')' at line 1, column 14");
    EXPECT_EQ(parse_error("root ::= \"a\"{3,1}"), "grammar: repetition {m,n} with n < m at line 1, column 17");
    EXPECT_EQ(parse_error("root ::= <[42]>"), "grammar: token references (<...>) are not supported at line 1, column 10");
}

TEST(Gbnf, LeftRecursionIsRefused) {
    EXPECT_EQ(parse_error("root ::= root \"a\" | \"a\"\n"),
              "grammar: rule 'root' is left-recursive (it reaches itself without consuming input: root -> root)");
    // Through a rule that may match nothing, and through a starred empty item.
    EXPECT_NE(parse_error("root ::= opt root \"a\" | \"b\"\nopt ::= \"x\"?\n").find("left-recursive"), std::string::npos);
    EXPECT_NE(parse_error("root ::= (\"a\"?)*\n").find("left-recursive"), std::string::npos);
    // Right recursion is fine.
    EXPECT_EQ(parse_error("root ::= \"a\" root | \"a\"\n"), "");
}

TEST(Gbnf, GrammarThatMatchesNothingIsRefused) {
    const std::string expected = "grammar: the grammar can match nothing";
    EXPECT_EQ(parse_error("root ::= \"a\" root\n").substr(0, expected.size()), expected);
    EXPECT_EQ(parse_error("root ::= [^\\x00-\\U0010FFFF]\n").substr(0, expected.size()), expected);
    EXPECT_EQ(parse_error("root ::= \"a\" root | \"b\"\n"), "");
}

TEST(Gbnf, RepetitionBeyondTheElementBoundIsRefused) {
    EXPECT_NE(parse_error("root ::= \"ab\"{999999999}").find("GrammarLimits::max_elements"), std::string::npos);
    // A repeated group is one rule referenced n times: linear, so it is within the bound.
    EXPECT_EQ(parse_error("root ::= (\"a\"{1000}){2000}"), "");
}

TEST(Gbnf, AmbiguousGrammarStaysBounded) {
    // Every prefix of a's can be split in exponentially many ways; the interned stack set
    // stays small, so this is fast.
    Matcher m(parse_gbnf("root ::= x*\nx ::= \"a\" | \"aa\" | \"aaa\" | y\ny ::= \"a\" \"a\"? \"a\"?\n"));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(m.accept(std::string(5000, 'a')));
    EXPECT_TRUE(m.can_end());
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST(Gbnf, TooManyParseStatesIsAnErrorNamingTheBound) {
    // N alternatives that all begin with "a" and end differently keep N stacks alive.
    std::string g = "root ::= \"a\" (";
    for (int i = 0; i < 100; ++i) g += (i ? " | " : "") + std::string("\"") + std::string(size_t(i + 1), 'b') + "c\"";
    g += ")\n";
    Matcher m(parse_gbnf(g), MatcherLimits{.max_stacks = 50});
    try {
        m.accept("ab");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("MatcherLimits::max_stacks"), std::string::npos) << e.what();
    }
    Matcher roomy(parse_gbnf(g));
    EXPECT_TRUE(roomy.accept("abbbc"));
    EXPECT_TRUE(roomy.must_end());
}

TEST(Gbnf, ConcatenatedGrammarsMatchInTurn) {
    const std::shared_ptr<const Grammar> parts[] = {parse_gbnf(R"(root ::= [a-z]* ":")"),
                                                    parse_gbnf("root ::= digit+\ndigit ::= [0-9]"),
                                                    parse_gbnf(R"(root ::= "!")")};
    Matcher m(concatenate(parts));
    EXPECT_TRUE(m.accept("abc:12!"));
    EXPECT_TRUE(m.must_end());
    Matcher early(concatenate(parts));
    EXPECT_FALSE(early.accept("abc:!"));
}

}  // namespace
}  // namespace k3::grammar
