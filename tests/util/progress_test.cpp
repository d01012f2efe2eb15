// util::Progress on a log (not a terminal): its closing line counts every item and byte advanced,
// several items at a time included.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "util/progress.h"

namespace k3::util {
namespace {

std::string contents(std::FILE* file) {
    std::rewind(file);
    std::string text;
    for (int c; (c = std::fgetc(file)) != EOF;) text += char(c);
    return text;
}

TEST(Progress, TheClosingLineCountsEveryItemAndByte) {
    std::FILE* log = std::tmpfile();
    ASSERT_NE(log, nullptr);
    {
        Progress bar(log, 4000, 5);
        bar.advance(1000, "first");
        bar.advance(2000, "next three", 3);
        bar.advance(1000, "last");
        bar.finish();
    }
    const std::string text = contents(log);
    std::fclose(log);
    const std::string last = text.substr(text.rfind('[', text.size()));
    EXPECT_EQ(last.rfind("[5/5] 100.0%", 0), 0u) << text;
    EXPECT_NE(last.find("done"), std::string::npos) << text;
    EXPECT_EQ(text.back(), '\n');
}

TEST(Progress, NoFileIsSilent) {
    Progress bar(nullptr, 10, 1);
    bar.advance(10, "only");
    bar.finish();  // must not touch a null stream
}

}  // namespace
}  // namespace k3::util
