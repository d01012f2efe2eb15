#include "text/bounded_json.h"

#include <string>

#include "util/error.h"

namespace k3::text {
namespace {

using Json = nlohmann::ordered_json;

// A first, iterative pass that only follows how deep containers open, stopping at the first
// one beyond kMaxNesting. (nlohmann's parser callback would do it in one pass, but its DOM
// builder then rescans the parent of every closed object: quadratic in a long array.)
struct NestingCheck : nlohmann::json_sax<Json> {
    int depth = 0;
    bool too_deep = false;
    std::string error;

    bool open() {
        too_deep = ++depth > kMaxNesting;
        return !too_deep;
    }
    bool close() {
        --depth;
        return true;
    }
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return open(); }
    bool key(string_t&) override { return true; }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        error = e.what();
        return false;
    }
};

}  // namespace

nlohmann::ordered_json parse_bounded_json(std::string_view text) {
    NestingCheck check;
    Json::sax_parse(text, &check);
    if (check.too_deep) throw Error("JSON nests deeper than " + std::to_string(kMaxNesting) + " levels");
    if (!check.error.empty()) throw Error("not valid JSON: " + check.error);
    return Json::parse(text);
}

}  // namespace k3::text
