// Human byte sizes: "16G", "500M", "4096", "1.5T" (powers of 1024), and back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace k3::util {

// Parses a byte count with an optional K/M/G/T suffix (optionally followed by "B" or "iB").
// Throws k3::Error naming the text if it is not a size or does not fit in 64 bits.
uint64_t parse_byte_size(std::string_view text);

// "2.50 GiB", "17.00 MiB", "512 B".
std::string format_byte_size(uint64_t bytes);

}  // namespace k3::util
