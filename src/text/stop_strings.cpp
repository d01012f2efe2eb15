#include "text/stop_strings.h"

#include <algorithm>

namespace k3::text {

StopStringFilter::StopStringFilter(std::vector<std::string> stop_strings) {
    for (std::string& stop : stop_strings)
        if (!stop.empty()) stop_strings_.push_back(std::move(stop));
}

std::string StopStringFilter::push(std::string_view text) {
    if (stopped_) return {};
    held_ += text;
    // The earliest occurrence wins; at one position, the longest stop string.
    size_t first = std::string::npos;
    for (const std::string& stop : stop_strings_) {
        const size_t at = held_.find(stop);
        if (at == std::string::npos) continue;
        if (at < first || (at == first && stop.size() > matched_.size())) {
            first = at;
            matched_ = stop;
        }
    }
    if (first != std::string::npos) {
        stopped_ = true;
        std::string shown = held_.substr(0, first);
        held_.clear();
        return shown;
    }
    // Hold back the longest tail that some stop string starts with. A stop string is valid
    // UTF-8 and begins with a lead byte, so the cut never splits a character.
    size_t keep = 0;
    for (const std::string& stop : stop_strings_) {
        for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n) {
            if (std::string_view(held_).substr(held_.size() - n) == std::string_view(stop).substr(0, n)) {
                keep = n;
                break;
            }
        }
    }
    std::string shown = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return shown;
}

std::string StopStringFilter::finish() {
    std::string rest;
    rest.swap(held_);
    return rest;
}

}  // namespace k3::text
