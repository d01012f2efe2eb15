// `k3 tokenize -m MODEL [--parse-special] (TEXT | --file F)`: the token ids of a text, as JSON.
// `k3 detokenize -m MODEL IDS`: the text of ids given as "1,2,3" or "[1, 2, 3]", byte for byte.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "gguf/gguf_file.h"
#include "text/tokenizer.h"
#include "util/error.h"

namespace k3::cli {
namespace {

std::string read_all(const std::string& path) {
    if (path == "-") return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open for reading");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad()) throw Error(path + ": read failed");
    return bytes.str();
}

// "1,2,3", "1, 2, 3" or a JSON array "[1,2,3]".
std::vector<int32_t> parse_ids(const std::string& text) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '[') {
        try {
            return nlohmann::json::parse(text).get<std::vector<int32_t>>();
        } catch (const nlohmann::json::exception& e) {
            throw Error("ids '" + text + "' are not a JSON array of integers: " + e.what());
        }
    }
    std::vector<int32_t> ids;
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ',');) {
        const size_t begin = item.find_first_not_of(" \t\r\n");
        if (begin == std::string::npos) {
            if (text.find_first_not_of(" \t\r\n") == std::string::npos) break;  // no ids at all
            throw Error("ids '" + text + "': empty item in the comma-separated list");
        }
        size_t used = 0;
        long long value = 0;
        try {
            value = std::stoll(item.substr(begin), &used);
        } catch (const std::exception&) {
            used = 0;
        }
        const size_t end = item.find_last_not_of(" \t\r\n") + 1;
        if (used == 0 || begin + used != end || value < INT32_MIN || value > INT32_MAX)
            throw Error("ids '" + text + "': '" + item + "' is not a token id");
        ids.push_back(static_cast<int32_t>(value));
    }
    return ids;
}

text::Tokenizer load_tokenizer(const std::string& model_path) {
    const auto file = gguf::GgufFile::open(model_path);
    return text::Tokenizer::from_gguf(*file);
}

}  // namespace

int run_tokenize(int argc, char** argv) {
    CLI::App app{"Print the token ids of a text as a JSON array (no BOS is added)."};
    show_defaults(app);
    std::string model, text, file;
    bool parse_special = false;
    app.add_option("-m,--model", model, "the GGUF whose vocabulary to use")->required();
    auto* text_option = app.add_option("text", text, "the text to tokenize");
    auto* file_option = app.add_option("-f,--file", file, "read the text from this file ('-': stdin)");
    text_option->excludes(file_option);
    app.add_flag("--parse-special", parse_special,
                 "recognise special-token text such as <|open|> (never do this for user content)");
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    if (!*text_option && !*file_option) throw UsageError("give the text, or --file");

    const text::Tokenizer tokenizer = load_tokenizer(model);
    const std::vector<int32_t> ids = tokenizer.encode(*file_option ? read_all(file) : text, parse_special);
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    return 0;
}

int run_detokenize(int argc, char** argv) {
    CLI::App app{"Print the text of token ids, byte for byte (no newline is added)."};
    show_defaults(app);
    std::string model, ids_text;
    bool skip_special = false;
    app.add_option("-m,--model", model, "the GGUF whose vocabulary to use")->required();
    app.add_option("ids", ids_text, "token ids: 1,2,3 or [1, 2, 3]")->required();
    app.add_flag("--skip-special", skip_special, "control tokens produce no text");
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;

    const text::Tokenizer tokenizer = load_tokenizer(model);
    const std::string bytes = tokenizer.decode(parse_ids(ids_text), !skip_special);
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return 0;
}

}  // namespace k3::cli
