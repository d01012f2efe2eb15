#include "text/bounded_json.h"

#include <string>

#include "util/error.h"

namespace k3::text {

nlohmann::ordered_json parse_bounded_json(std::string_view text) {
    using Json = nlohmann::ordered_json;
    // nlohmann's parser is iterative; the callback sees each container open with the number
    // of containers around it.
    const Json::parser_callback_t refuse_deep = [](int depth, Json::parse_event_t event, Json&) {
        if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
            depth + 1 > kMaxNesting)
            throw Error("JSON nests deeper than " + std::to_string(kMaxNesting) + " levels");
        return true;
    };
    try {
        return Json::parse(text, refuse_deep);
    } catch (const Json::parse_error& e) {
        throw Error(std::string("not valid JSON: ") + e.what());
    }
}

}  // namespace k3::text
