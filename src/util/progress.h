// Progress of long work (a conversion, reading a model into memory) on a terminal or a log:
// items done, bytes, bytes/s and ETA.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace k3::util {

class Progress {
public:
    // `out` null: silent. On a terminal the line is redrawn (at most ten times a second); otherwise
    // a line every few seconds.
    Progress(std::FILE* out, uint64_t total_bytes, size_t total_items);
    void advance(uint64_t bytes, std::string_view item, size_t items = 1);  // `items` more finished
    void finish();

private:
    void print(std::string_view item);

    std::FILE* out_;
    bool terminal_;
    uint64_t total_bytes_, done_bytes_ = 0;
    size_t total_items_, done_items_ = 0;
    std::chrono::steady_clock::time_point start_, last_print_;
};

}  // namespace k3::util
