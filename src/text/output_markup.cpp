#include "text/output_markup.h"

#include <algorithm>
#include <utility>

#include "text/utf8.h"

namespace k3::text {
namespace {

constexpr std::string_view kMarkers[] = {kOpenMarker, kCloseMarker, kSepMarker, kEndOfMessageMarker};

struct MarkerHit {
    size_t at;
    std::string_view marker;
};

// The first complete marker in `text` at or after `from`.
std::optional<MarkerHit> find_marker(std::string_view text, size_t from) {
    for (size_t at = text.find("<|", from); at != std::string_view::npos; at = text.find("<|", at + 1))
        for (std::string_view marker : kMarkers)
            if (text.substr(at).starts_with(marker)) return MarkerHit{at, marker};
    return std::nullopt;
}

// Length of the longest suffix of `text` that is a proper prefix of some marker.
size_t marker_prefix_suffix(std::string_view text) {
    for (size_t n = std::min<size_t>(text.size(), kEndOfMessageMarker.size() - 1); n > 0; --n)
        for (std::string_view marker : kMarkers)
            if (n < marker.size() && marker.starts_with(text.substr(text.size() - n))) return n;
    return 0;
}

// Length of a trailing UTF-8 sequence that more bytes could still complete.
size_t incomplete_utf8_suffix(std::string_view text) {
    for (size_t n = 1; n <= 3 && n <= text.size(); ++n)
        if (utf8_is_incomplete_prefix(text.substr(text.size() - n))) return n;
    return 0;
}

std::string unescape_attribute(std::string_view value) {
    std::string out;
    for (size_t i = 0; i < value.size();) {
        if (value.substr(i).starts_with("&quot;")) {
            out += '"';
            i += 6;
        } else if (value.substr(i).starts_with("&amp;")) {
            out += '&';
            i += 5;
        } else {
            out += value[i++];
        }
    }
    return out;
}

}  // namespace

void MarkupLexer::push(std::string_view text, std::vector<MarkupEvent>& events) {
    buffer_ += text;
    for (;;) {
        const auto hit = find_marker(buffer_, search_from_);
        if (in_tag_) {
            if (!hit) break;  // the header goes on
            const std::string header = buffer_.substr(0, hit->at);
            if (hit->marker == kSepMarker) {
                events.push_back({*in_tag_, header});
                buffer_.erase(0, hit->at + kSepMarker.size());
            } else {  // another marker before <|sep|>: the tag was not one
                if (!header.empty()) events.push_back({MarkupEvent::Kind::Text, header});
                buffer_.erase(0, hit->at);
            }
            in_tag_.reset();
            search_from_ = 0;
            continue;
        }
        if (!hit) {
            const std::string_view rest = buffer_;
            size_t hold = marker_prefix_suffix(rest);
            hold += incomplete_utf8_suffix(rest.substr(0, rest.size() - hold));
            const size_t emit = rest.size() - hold;
            if (emit > 0) events.push_back({MarkupEvent::Kind::Text, buffer_.substr(0, emit)});
            buffer_.erase(0, emit);
            search_from_ = 0;
            break;
        }
        if (hit->at > 0) events.push_back({MarkupEvent::Kind::Text, buffer_.substr(0, hit->at)});
        if (hit->marker == kEndOfMessageMarker) events.push_back({MarkupEvent::Kind::EndOfMessage, {}});
        if (hit->marker == kOpenMarker) in_tag_ = MarkupEvent::Kind::Open;
        if (hit->marker == kCloseMarker) in_tag_ = MarkupEvent::Kind::Close;
        buffer_.erase(0, hit->at + hit->marker.size());
        search_from_ = 0;
    }
    // Inside a header nothing is emitted; only a marker's last bytes can complete it next time.
    if (in_tag_) search_from_ = buffer_.size() - std::min(buffer_.size(), kEndOfMessageMarker.size() - 1);
}

void MarkupLexer::finish(std::vector<MarkupEvent>& events) {
    if (!buffer_.empty()) events.push_back({MarkupEvent::Kind::Text, buffer_});
    buffer_.clear();
    search_from_ = 0;
    in_tag_.reset();
}

std::string MarkerBreaker::push(std::string_view text) {
    std::string buffer = std::exchange(held_, {}) + std::string(text);
    std::string out;
    size_t at = 0;
    for (auto hit = find_marker(buffer, 0); hit; hit = find_marker(buffer, at)) {
        out.append(buffer, at, hit->at + 1 - at);
        out += "\xE2\x80\x8B";
        at = hit->at + 1;
    }
    const size_t hold = marker_prefix_suffix(std::string_view(buffer).substr(at));
    out.append(buffer, at, buffer.size() - at - hold);
    held_ = buffer.substr(buffer.size() - hold);
    return out;
}

std::string MarkerBreaker::finish() { return std::exchange(held_, {}); }

std::string break_markers(std::string_view text) {
    MarkerBreaker breaker;
    return breaker.push(text) + breaker.finish();
}

std::optional<TagHeader> parse_tag_header(std::string_view header) {
    TagHeader tag;
    size_t at = header.find(' ');
    tag.name = header.substr(0, at);
    if (tag.name.empty()) return std::nullopt;
    while (at != std::string_view::npos && at < header.size()) {
        while (at < header.size() && header[at] == ' ') ++at;
        if (at == header.size()) break;
        const size_t equals = header.find("=\"", at);
        if (equals == std::string_view::npos || equals == at) return std::nullopt;
        const size_t close = header.find('"', equals + 2);
        if (close == std::string_view::npos) return std::nullopt;
        const std::string_view key = header.substr(at, equals - at);
        if (key.find(' ') != std::string_view::npos) return std::nullopt;
        tag.attributes[std::string(key)] = unescape_attribute(header.substr(equals + 2, close - equals - 2));
        at = close + 1;
        if (at < header.size() && header[at] != ' ') return std::nullopt;
    }
    return tag;
}

}  // namespace k3::text
