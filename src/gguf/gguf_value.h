// Checked conversions of GGUF metadata values, shared by the reader's typed getters and `k3 info`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gguf/gguf_file.h"

namespace k3::gguf {

bool is_integer(ValueType type);
bool is_float(ValueType type);

// Each throws k3::Error "KEY: expected ..., found ..." when the value does not fit.
uint64_t value_as_uint(const Value& value, std::string_view key);
int64_t value_as_int(const Value& value, std::string_view key);
double value_as_float(const Value& value, std::string_view key);

// Same type and content; arrays item by item, whether built in memory or read from a file.
bool operator==(const Value& a, const Value& b);

// A short human rendering: scalars in full, strings quoted (cut after max_chars), arrays as
// "[type x count]" followed by their first items.
std::string value_to_display(const Value& value, size_t max_chars = 80);

}  // namespace k3::gguf
