// StopStringFilter: streamed text is shown except a stop string and what follows it, however
// the text is cut into pieces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/stop_strings.h"

namespace k3::text {
namespace {

// Pushes `text` in pieces of `piece` bytes; returns everything shown.
std::string stream(StopStringFilter& filter, const std::string& text, size_t piece) {
    std::string shown;
    for (size_t at = 0; at < text.size() && !filter.stopped(); at += piece) shown += filter.push(text.substr(at, piece));
    return shown + filter.finish();
}

TEST(StopStringFilter, CutsBeforeTheFirstStopStringForEveryPieceSize) {
    const std::string text = "Answer: 42.\nUser: next question\nUser: again";
    for (size_t piece = 1; piece <= text.size(); ++piece) {
        StopStringFilter filter({"User:", "never"});
        EXPECT_EQ(stream(filter, text, piece), "Answer: 42.\n") << piece;
        EXPECT_TRUE(filter.stopped());
        EXPECT_EQ(filter.matched(), "User:");
    }
}

TEST(StopStringFilter, HoldsBackOnlyWhatCouldStillBecomeAStopString) {
    StopStringFilter filter({"<end>"});
    EXPECT_EQ(filter.push("abc<e"), "abc");
    EXPECT_EQ(filter.push("n"), "");
    EXPECT_EQ(filter.push("x"), "<enx");  // no longer a prefix of "<end>"
    EXPECT_EQ(filter.push("<"), "");
    EXPECT_EQ(filter.finish(), "<");      // the end of the text: nothing more can come
    EXPECT_FALSE(filter.stopped());
}

TEST(StopStringFilter, EarliestMatchWinsAndLongerAtTheSamePlace) {
    StopStringFilter earliest({"cd", "b"});
    EXPECT_EQ(earliest.push("abcd"), "a");
    EXPECT_EQ(earliest.matched(), "b");

    StopStringFilter longest({"ab", "abc"});
    EXPECT_EQ(longest.push("xabcd"), "x");
    EXPECT_EQ(longest.matched(), "abc");
    EXPECT_EQ(longest.push("more"), "");  // nothing after a stop
    EXPECT_EQ(longest.finish(), "");
}

TEST(StopStringFilter, NoStopStringsOrEmptyOnesPassEverything) {
    StopStringFilter filter({"", ""});
    EXPECT_EQ(filter.push("hello"), "hello");
    EXPECT_EQ(filter.finish(), "");
    EXPECT_FALSE(filter.stopped());
}

TEST(StopStringFilter, MultiByteStopStringsCutBetweenCharacters) {
    const std::string text = "数字是四十二。然后";  // stop at "。然"
    for (size_t piece = 1; piece <= text.size(); ++piece) {
        StopStringFilter filter({"。然"});
        EXPECT_EQ(stream(filter, text, piece), "数字是四十二") << piece;
    }
}

}  // namespace
}  // namespace k3::text
