#include "gguf/gguf_value.h"

#include <cstdio>
#include <limits>
#include <type_traits>
#include <vector>

#include "util/error.h"

namespace k3::gguf {

std::string_view value_type_name(ValueType type) {
    switch (type) {
        case ValueType::UINT8: return "u8";
        case ValueType::INT8: return "i8";
        case ValueType::UINT16: return "u16";
        case ValueType::INT16: return "i16";
        case ValueType::UINT32: return "u32";
        case ValueType::INT32: return "i32";
        case ValueType::FLOAT32: return "f32";
        case ValueType::BOOL: return "bool";
        case ValueType::STRING: return "string";
        case ValueType::ARRAY: return "array";
        case ValueType::UINT64: return "u64";
        case ValueType::INT64: return "i64";
        case ValueType::FLOAT64: return "f64";
    }
    return "unknown";
}

bool is_integer(ValueType type) {
    switch (type) {
        case ValueType::UINT8: case ValueType::INT8: case ValueType::UINT16: case ValueType::INT16:
        case ValueType::UINT32: case ValueType::INT32: case ValueType::UINT64: case ValueType::INT64:
            return true;
        default:
            return false;
    }
}

bool is_float(ValueType type) { return type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }

namespace {

Error type_mismatch(const Value& value, std::string_view key, std::string_view expected) {
    std::string message(key);
    message += ": expected ";
    message += expected;
    message += ", found ";
    message += value_type_name(value.type);
    return Error(message);
}

}  // namespace

uint64_t value_as_uint(const Value& value, std::string_view key) {
    if (!is_integer(value.type)) throw type_mismatch(value, key, "an integer");
    if (const auto* u = std::get_if<uint64_t>(&value.data)) return *u;
    const int64_t i = std::get<int64_t>(value.data);
    if (i < 0) throw Error(std::string(key) + ": expected a non-negative integer, found " + std::to_string(i));
    return uint64_t(i);
}

int64_t value_as_int(const Value& value, std::string_view key) {
    if (!is_integer(value.type)) throw type_mismatch(value, key, "an integer");
    if (const auto* i = std::get_if<int64_t>(&value.data)) return *i;
    const uint64_t u = std::get<uint64_t>(value.data);
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
        throw Error(std::string(key) + ": integer " + std::to_string(u) + " does not fit in int64");
    return int64_t(u);
}

double value_as_float(const Value& value, std::string_view key) {
    if (is_float(value.type)) return std::get<double>(value.data);
    if (const auto* u = std::get_if<uint64_t>(&value.data); u && is_integer(value.type)) return double(*u);
    if (const auto* i = std::get_if<int64_t>(&value.data); i && is_integer(value.type)) return double(*i);
    throw type_mismatch(value, key, "a number");
}

bool operator==(const Value& a, const Value& b) {
    if (a.type != b.type || a.data.index() != b.data.index()) return false;
    if (a.type != ValueType::ARRAY)
        return std::visit(
            [&](const auto& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, Array>) return false;  // an ARRAY-typed value
                else return x == std::get<T>(b.data);
            },
            a.data);
    const Array& x = std::get<Array>(a.data);
    const Array& y = std::get<Array>(b.data);
    if (x.element_type != y.element_type || x.size() != y.size()) return false;
    std::vector<Value> items;
    items.reserve(size_t(x.size()));
    x.for_each([&](Value item) { items.push_back(std::move(item)); });
    size_t k = 0;
    bool equal = true;
    y.for_each([&](Value item) { equal = equal && items[k++] == item; });
    return equal;
}

std::string value_to_display(const Value& value, size_t max_chars) {
    std::string out;
    switch (value.type) {
        case ValueType::BOOL:
            return std::get<bool>(value.data) ? "true" : "false";
        case ValueType::FLOAT32:
        case ValueType::FLOAT64: {
            char buffer[40];
            std::snprintf(buffer, sizeof buffer, "%.9g", std::get<double>(value.data));
            return buffer;
        }
        case ValueType::STRING: {
            const std::string& s = std::get<std::string>(value.data);
            out = "\"";
            for (char c : s.substr(0, max_chars)) {
                if (c == '\n') out += "\\n";
                else if (c == '"') out += "\\\"";
                else if (static_cast<unsigned char>(c) < 0x20) out += '?';
                else out += c;
            }
            out += s.size() > max_chars ? "\"... (" + std::to_string(s.size()) + " bytes)" : "\"";
            return out;
        }
        case ValueType::ARRAY: {
            const Array& a = std::get<Array>(value.data);
            out = "[" + std::string(value_type_name(a.element_type)) + " x " + std::to_string(a.size()) + "]";
            std::string items;
            for (uint64_t i = 0; i < a.size(); ++i) {
                std::string item = value_to_display(a.at(i), max_chars);
                if (items.size() + item.size() > max_chars) {
                    items += ", ...";
                    break;
                }
                items += (i ? ", " : " ") + item;
            }
            return out + items;
        }
        default:
            if (const auto* u = std::get_if<uint64_t>(&value.data)) return std::to_string(*u);
            return std::to_string(std::get<int64_t>(value.data));
    }
}

}  // namespace k3::gguf
