// The README's command table matches the binary: every subcommand `k3 --help` lists has a row,
// every long option a row names is in that subcommand's --help, and every default a row states
// is the one --help shows.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace k3::cli {
namespace {

using testing::run_k3;

std::vector<std::string> command_table_rows() {
    const std::string readme = testing::read_text(std::string(K3_SOURCE_DIR) + "/README.md");
    const size_t start = readme.find("| command | does |");
    std::vector<std::string> rows;
    if (start == std::string::npos) return rows;
    std::istringstream lines(readme.substr(start));
    std::string line;
    std::getline(lines, line);  // header
    std::getline(lines, line);  // |---|---|
    while (std::getline(lines, line) && line.starts_with("| ")) rows.push_back(line);
    return rows;
}

std::vector<std::string> matches(const std::string& text, const std::regex& pattern, int group) {
    std::vector<std::string> found;
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) found.push_back((*it)[group]);
    return found;
}

TEST(Readme, CommandTableMatchesHelp) {
    const std::vector<std::string> rows = command_table_rows();
    ASSERT_GE(rows.size(), 10u);
    const std::string overview = run_k3({"--help"}).out;
    std::string documented;
    for (const std::string& row : rows) {
        const std::string first_cell = row.substr(0, row.find(" | ", 2));
        const std::vector<std::string> commands = matches(first_cell, std::regex("`k3 ([a-z]+)"), 1);
        ASSERT_FALSE(commands.empty()) << row;
        std::string help;
        for (const std::string& command : commands) {
            const testing::CommandResult r = run_k3({command, "--help"});
            ASSERT_EQ(r.exit_code, 0) << command;
            help += r.out;
            documented += " " + command + " ";
        }
        for (const std::string& option : matches(row, std::regex("(--[a-z][a-z0-9-]*)"), 1))
            EXPECT_TRUE(std::regex_search(help, std::regex(option + "(?![a-z0-9-])"))) << option << " in: " << row;
    }
    for (const std::string& command : matches(overview, std::regex("\n  ([a-z]+) "), 1))
        EXPECT_NE(documented.find(" " + command + " "), std::string::npos) << command << " has no README row";
}

// The --help line that lists `option` (e.g. "  -p,--n-prompt INT=512  ..."), empty when none does.
std::string help_line(const std::string& help, const std::string& option) {
    std::istringstream lines(help);
    const std::regex names("^ +(-[^ ]+)");
    const std::regex listed("(^|,)" + option + "(,|$)");
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_search(line, m, names) && std::regex_search(m[1].str(), listed)) return line;
    }
    return {};
}

// "[--port 8080]" in a row's usage and "`-n 512`" in its text state a default; placeholders
// (FILE, N), choices (a|b) and options without a value state none.
TEST(Readme, CommandTableDefaultsAreThoseOfHelp) {
    const std::regex stated(R"((?:\[|`)(-{1,2}[a-z][a-z0-9-]*) (-?[a-z0-9.]+)(?:\]|`))");
    int checked = 0;
    for (const std::string& row : command_table_rows()) {
        const std::vector<std::string> commands =
            matches(row.substr(0, row.find(" | ", 2)), std::regex("`k3 ([a-z]+)"), 1);
        std::string help;
        for (const std::string& command : commands) help += run_k3({command, "--help"}).out;
        for (std::sregex_iterator it(row.begin(), row.end(), stated), end; it != end; ++it) {
            const std::string option = (*it)[1], value = (*it)[2];
            const std::string line = help_line(help, option);
            ASSERT_FALSE(line.empty()) << option << " is not in the --help of: " << row;
            const std::string shown = std::regex_replace(value, std::regex("\\."), "\\.");
            EXPECT_TRUE(std::regex_search(line, std::regex(std::string("=").append(shown).append("( |$)"))))
                << "README: " << option << " " << value << "; --help: " << line;
            ++checked;
        }
    }
    EXPECT_GE(checked, 14);  // what the table states today: fewer means the pattern no longer reads it
}

}  // namespace
}  // namespace k3::cli
