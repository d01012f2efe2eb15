#include "text/bpe.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace k3::text {
namespace {

RankLookup ranks_from(const std::map<std::string, uint32_t, std::less<>>& table) {
    return [&table](std::string_view bytes) -> std::optional<uint32_t> {
        auto it = table.find(bytes);
        if (it == table.end()) return std::nullopt;
        return it->second;
    };
}

std::vector<std::string> as_strings(const std::vector<std::string_view>& parts) {
    return {parts.begin(), parts.end()};
}

// The textbook form of the algorithm (a linear scan per merge), as tiktoken writes it.
std::vector<std::string> naive_bpe(const std::string& piece, const RankLookup& rank_of) {
    std::vector<std::string> parts;
    for (char c : piece) parts.emplace_back(1, c);
    for (;;) {
        std::optional<uint32_t> best;
        size_t best_at = 0;
        for (size_t i = 0; i + 1 < parts.size(); ++i) {
            auto r = rank_of(parts[i] + parts[i + 1]);
            if (r && (!best || *r < *best)) best = r, best_at = i;
        }
        if (!best) return parts;
        parts[best_at] += parts[best_at + 1];
        parts.erase(parts.begin() + static_cast<long>(best_at) + 1);
    }
}

TEST(Bpe, MergesLowestRankFirst) {
    std::map<std::string, uint32_t, std::less<>> table{{"bc", 0}, {"ab", 1}};
    // "bc" (rank 0) wins over "ab" (rank 1), and "a"+"bc" is not a token.
    EXPECT_EQ(as_strings(bpe_split("abc", ranks_from(table))),
              (std::vector<std::string>{"a", "bc"}));
    // Without "bc", "ab" merges first and then "ab"+"c".
    table.erase("bc");
    table["abc"] = 2;
    EXPECT_EQ(as_strings(bpe_split("abc", ranks_from(table))),
              (std::vector<std::string>{"abc"}));
}

TEST(Bpe, TiesGoToTheLeftmostPair) {
    std::map<std::string, uint32_t, std::less<>> table{{"aa", 0}};
    EXPECT_EQ(as_strings(bpe_split("aaa", ranks_from(table))),
              (std::vector<std::string>{"aa", "a"}));
    EXPECT_EQ(as_strings(bpe_split("aaaaa", ranks_from(table))),
              (std::vector<std::string>{"aa", "aa", "a"}));
}

TEST(Bpe, EmptyAndSingleByte) {
    std::map<std::string, uint32_t, std::less<>> table;
    EXPECT_TRUE(bpe_split("", ranks_from(table)).empty());
    EXPECT_EQ(as_strings(bpe_split("x", ranks_from(table))), (std::vector<std::string>{"x"}));
}

TEST(Bpe, AgreesWithTheNaiveAlgorithmOnRandomTables) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        // A small alphabet makes many merges and many rank ties between overlapping pairs.
        std::map<std::string, uint32_t, std::less<>> table;
        std::uniform_int_distribution<int> letter(0, 2), len(2, 4), count(1, 25);
        const int n_tokens = count(rng);
        for (int t = 0; t < n_tokens; ++t) {
            std::string token;
            for (int i = len(rng); i > 0; --i) token += static_cast<char>('a' + letter(rng));
            table.emplace(token, static_cast<uint32_t>(t));
        }
        std::string piece;
        for (int i = std::uniform_int_distribution<int>(1, 40)(rng); i > 0; --i)
            piece += static_cast<char>('a' + letter(rng));
        ASSERT_EQ(as_strings(bpe_split(piece, ranks_from(table))),
                  naive_bpe(piece, ranks_from(table)))
            << "piece " << piece << " trial " << trial;
    }
}

TEST(Bpe, LongPieceOfOneRepeatedByte) {
    // 100 KB of one byte with tokens for runs of 2, 4 and 8: the heap keeps this fast.
    std::map<std::string, uint32_t, std::less<>> table{
        {"aa", 0}, {"aaaa", 1}, {"aaaaaaaa", 2}};
    const std::string piece(100000, 'a');
    auto parts = bpe_split(piece, ranks_from(table));
    ASSERT_EQ(parts.size(), 100000u / 8);
    for (auto p : parts) ASSERT_EQ(p.size(), 8u);
}

}  // namespace
}  // namespace k3::text
