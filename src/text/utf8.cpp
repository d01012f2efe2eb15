#include "text/utf8.h"

#include <cstdint>

namespace k3::text {
namespace {

// How many bytes a sequence with this lead byte has (0: not a lead byte), and the allowed range
// of its second byte (RFC 3629 table 3-7), which excludes overlongs, surrogates and > U+10FFFF.
struct LeadInfo {
    size_t length;
    uint8_t second_min, second_max;
};

LeadInfo lead_info(uint8_t b) {
    if (b < 0x80) return {1, 0, 0};
    if (b < 0xC2) return {0, 0, 0};
    if (b < 0xE0) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b < 0xF0) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b < 0xF4) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

// Number of leading bytes of `bytes` that agree with a well-formed sequence (at most its length).
size_t matching_prefix(std::string_view bytes, LeadInfo info) {
    size_t n = 1;
    for (; n < info.length && n < bytes.size(); ++n) {
        const auto b = static_cast<uint8_t>(bytes[n]);
        const uint8_t lo = n == 1 ? info.second_min : 0x80, hi = n == 1 ? info.second_max : 0xBF;
        if (b < lo || b > hi) break;
    }
    return n;
}

}  // namespace

size_t utf8_sequence_length(std::string_view bytes) {
    const LeadInfo info = lead_info(static_cast<uint8_t>(bytes[0]));
    if (info.length == 0 || bytes.size() < info.length) return 0;
    return matching_prefix(bytes, info) == info.length ? info.length : 0;
}

bool utf8_is_incomplete_prefix(std::string_view bytes) {
    if (bytes.empty()) return false;
    const LeadInfo info = lead_info(static_cast<uint8_t>(bytes[0]));
    return info.length > bytes.size() && matching_prefix(bytes, info) == bytes.size();
}

size_t utf8_valid_prefix_length(std::string_view bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
        const size_t n = utf8_sequence_length(bytes.substr(at));
        if (n == 0) break;
        at += n;
    }
    return at;
}

size_t utf8_append_sanitized(std::string_view bytes, std::string& out, bool hold_incomplete_tail) {
    size_t at = 0;
    while (at < bytes.size()) {
        const std::string_view rest = bytes.substr(at);
        if (const size_t n = utf8_sequence_length(rest)) {
            out.append(rest.substr(0, n));
            at += n;
            continue;
        }
        if (hold_incomplete_tail && utf8_is_incomplete_prefix(rest)) break;
        out += "\xEF\xBF\xBD";
        const LeadInfo info = lead_info(static_cast<uint8_t>(rest[0]));
        at += info.length == 0 ? 1 : matching_prefix(rest, info);
    }
    return at;
}

}  // namespace k3::text
