#include "util/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "util/error.h"

namespace k3::util {

uint64_t parse_byte_size(std::string_view text) {
    auto fail = [&]() -> Error {
        std::string message(text);
        message += " is not a byte size (expected e.g. 4096, 500M, 16G)";
        return Error(message);
    };
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == 0) throw fail();
    std::string number(text.substr(0, i));
    std::string_view suffix = text.substr(i);
    double multiplier = 1;
    if (!suffix.empty()) {
        const std::string_view units = "KMGTP";
        size_t unit = units.find(char(std::toupper(static_cast<unsigned char>(suffix[0]))));
        if (unit != std::string_view::npos) {
            multiplier = std::pow(1024.0, double(unit + 1));
            suffix.remove_prefix(1);
        }
        if (suffix == "iB" || suffix == "ib") suffix = {};
        if (suffix == "B" || suffix == "b") suffix = {};
        if (!suffix.empty()) throw fail();
    }
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) throw fail();
    double bytes = value * multiplier;
    if (!(bytes < 18446744073709551616.0)) throw fail();
    return uint64_t(bytes);
}

std::string format_byte_size(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = double(bytes);
    int unit = 0;
    while (value >= 1024 && unit < 5) {
        value /= 1024;
        ++unit;
    }
    char buffer[32];
    if (unit == 0) std::snprintf(buffer, sizeof buffer, "%llu B", static_cast<unsigned long long>(bytes));
    else std::snprintf(buffer, sizeof buffer, "%.2f %s", value, units[unit]);
    return buffer;
}

}  // namespace k3::util
