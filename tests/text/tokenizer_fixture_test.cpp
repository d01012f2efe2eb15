// The tokenizer against llama.cpp's (and tiktoken's) ids for the fixture strings.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "text/tokenizer.h"
#include "util/error.h"

namespace k3::text {
namespace {

const Tokenizer& fixture_tokenizer() {
    static const auto file = gguf::GgufFile::open(k3::testing::fixture("tiny-k3/model.gguf"));
    static const Tokenizer tokenizer = Tokenizer::from_gguf(*file);
    return tokenizer;
}

nlohmann::json tokenizer_cases() {
    return nlohmann::json::parse(k3::testing::read_text(k3::testing::fixture("tokenizer/tokenizer_cases.json")))["cases"];
}

TEST(TokenizerFixture, EncodesEveryCaseLikeTheReference) {
    const Tokenizer& tok = fixture_tokenizer();
    const auto cases = tokenizer_cases();
    ASSERT_EQ(cases.size(), 79u);
    for (const auto& c : cases) {
        const std::string text = c["text"];
        EXPECT_EQ(tok.encode(text, false), c["ids"].get<std::vector<int32_t>>()) << "text: " << text;
        EXPECT_EQ(tok.encode(text, true), c["ids_parse_special"].get<std::vector<int32_t>>()) << "text: " << text;
    }
}

TEST(TokenizerFixture, DecodingRestoresTheText) {
    const Tokenizer& tok = fixture_tokenizer();
    for (const auto& c : tokenizer_cases()) {
        const auto ids = c["ids"].get<std::vector<int32_t>>();
        const auto special_ids = c["ids_parse_special"].get<std::vector<int32_t>>();
        EXPECT_EQ(tok.decode(ids), c["detok"].get<std::string>());
        EXPECT_EQ(tok.decode(special_ids, true), c["detok_parse_special"].get<std::string>());
    }
}

TEST(TokenizerFixture, SpecialTokensOfTheVocabulary) {
    const Tokenizer& tok = fixture_tokenizer();
    // Ids from fixtures/README.md §1.
    EXPECT_EQ(tok.n_vocab(), 1024);
    EXPECT_EQ(tok.special_id("[BOS]"), 1000);
    EXPECT_EQ(tok.special_id("<|end_of_msg|>"), 1002);
    EXPECT_EQ(tok.special_id("<|open|>"), 1003);
    EXPECT_EQ(tok.special_id("<|sep|>"), 1004);
    EXPECT_EQ(tok.special_id("<|close|>"), 1005);
    EXPECT_EQ(tok.special_id("<|reserved_token_11|>"), 1019);
    EXPECT_EQ(tok.special_id("Hello"), std::nullopt);
    EXPECT_TRUE(tok.is_special(1006));
    EXPECT_FALSE(tok.is_special(403));
}

TEST(TokenizerFixture, EndOfGenerationIsEndOfMsgAndEos) {
    const Tokenizer& tok = fixture_tokenizer();
    // eos_token_id is <|end_of_msg|> (1002); [EOS] (1001) ends generation by its text; this
    // vocabulary has no [EOT].
    EXPECT_EQ(tok.end_of_generation_ids(), (std::vector<int32_t>{1001, 1002}));
    EXPECT_TRUE(tok.is_end_of_generation(1002));
    EXPECT_FALSE(tok.is_end_of_generation(1000));
}

TEST(TokenizerFixture, ControlTokensDecodeToNothingWithoutRenderSpecial) {
    const Tokenizer& tok = fixture_tokenizer();
    const std::vector<int32_t> ids{1003, 403, 1004};  // <|open|> Hello <|sep|>
    EXPECT_EQ(tok.decode(ids, false), "Hello");
    EXPECT_EQ(tok.decode(ids, true), "<|open|>Hello<|sep|>");
    EXPECT_EQ(tok.decode(std::vector<int32_t>{1020}), "");  // an unused [PAD1020] slot
    EXPECT_THROW(tok.decode(std::vector<int32_t>{1024}), Error);
    EXPECT_THROW(tok.decode(std::vector<int32_t>{-1}), Error);
}

TEST(TokenizerFixture, IllFormedUtf8RoundTripsByteByByte) {
    const Tokenizer& tok = fixture_tokenizer();
    const std::string text = "ab\xFF" "cd\xE4\xB8" " \xC3";  // a stray byte, a cut-off 3-byte char, a lone lead
    const auto ids = tok.encode(text);
    EXPECT_EQ(tok.decode(ids), text);
}

TEST(TokenizerFixture, ParseSpecialOnlyWhenAsked) {
    const Tokenizer& tok = fixture_tokenizer();
    const std::string text = "<|open|>x";
    const auto plain = tok.encode(text, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 1003), 0);
    EXPECT_EQ(tok.encode(text, true).front(), 1003);
}

TEST(StreamingDetokenizer, HoldsSplitCharactersUntilComplete) {
    const Tokenizer& tok = fixture_tokenizer();
    // "🙂" is four byte tokens (tokenizer_cases.json): nothing comes out before the last one.
    const std::vector<int32_t> ids{240, 159, 153, 130};
    StreamingDetokenizer detok(tok);
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        std::string piece = detok.push(ids[i]);
        if (i + 1 < ids.size()) {
            EXPECT_EQ(piece, "");
        }
        out += piece;
    }
    out += detok.finish();
    EXPECT_EQ(out, "\xF0\x9F\x99\x82");
}

TEST(StreamingDetokenizer, IllFormedBytesBecomeReplacementCharacters) {
    const Tokenizer& tok = fixture_tokenizer();
    StreamingDetokenizer detok(tok);
    // 0xFF can start nothing; 0xF0 0x9F then 'a' breaks the sequence; a final 0xE4 is cut off.
    std::string out;
    for (int32_t id : {255, 97, 240, 159, 97, 228}) out += detok.push(id);
    EXPECT_EQ(out, "\xEF\xBF\xBD" "a" "\xEF\xBF\xBD" "a");
    EXPECT_EQ(detok.finish(), "\xEF\xBF\xBD");
}

TEST(StreamingDetokenizer, ConcatenationEqualsDecodeOnEveryFixtureCase) {
    const Tokenizer& tok = fixture_tokenizer();
    for (const auto& c : tokenizer_cases()) {
        StreamingDetokenizer detok(tok);
        std::string out;
        for (int32_t id : c["ids_parse_special"].get<std::vector<int32_t>>()) out += detok.push(id);
        out += detok.finish();
        EXPECT_EQ(out, c["text"].get<std::string>());
    }
}

}  // namespace
}  // namespace k3::text
