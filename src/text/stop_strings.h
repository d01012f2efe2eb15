// Stop strings for streamed generation: text is shown as it comes, except a tail that could
// still grow into a stop string, so a stop string is never shown and generation can end as
// soon as one is complete.
//
//   text::StopStringFilter stops({"\n\n", "User:"});
//   show(stops.push(detok.push(id)));   // then end generation if stops.stopped()
//   show(stops.finish());               // at the end: whatever was held back
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3::text {

class StopStringFilter {
public:
    // Empty stop strings are ignored.
    explicit StopStringFilter(std::vector<std::string> stop_strings);

    // Appends streamed text and returns what can be shown now. When a stop string completes,
    // returns the text before its first occurrence, discards the rest and sets stopped();
    // later pushes return nothing.
    std::string push(std::string_view text);
    // The text held back at the end of generation (empty once stopped).
    std::string finish();

    bool stopped() const { return stopped_; }
    const std::string& matched() const { return matched_; }  // the stop string found, if any

private:
    std::vector<std::string> stop_strings_;
    std::string held_;  // a tail of the text that is a proper prefix of some stop string
    bool stopped_ = false;
    std::string matched_;
};

}  // namespace k3::text
