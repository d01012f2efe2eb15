// Lexing K3's output markup ("XTML", k3-architecture.md §11): text, `<|open|>HEADER<|sep|>`,
// `<|close|>NAME<|sep|>` and `<|end_of_msg|>`, incrementally. The events do not depend on how
// the input is cut into chunks, except that text may arrive in different pieces.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3::text {

// The four control-token texts of K3's markup.
inline constexpr std::string_view kOpenMarker = "<|open|>";
inline constexpr std::string_view kCloseMarker = "<|close|>";
inline constexpr std::string_view kSepMarker = "<|sep|>";
inline constexpr std::string_view kEndOfMessageMarker = "<|end_of_msg|>";

// One of the four: control tokens the output parser reads, so kept even where others are hidden.
inline bool is_markup_marker(std::string_view text) {
    return text == kOpenMarker || text == kCloseMarker || text == kSepMarker || text == kEndOfMessageMarker;
}

struct MarkupEvent {
    enum class Kind { Text, Open, Close, EndOfMessage };
    Kind kind;
    std::string text;  // Text: the text; Open: the header ("call tool=\"x\" index=\"1\""); Close: the name
};

class MarkupLexer {
public:
    // Appends the events that `text` completes. Text that could still be the start of a marker,
    // or of a UTF-8 character, is held back. A tag whose `<|sep|>` never comes (another marker
    // or the end arrives first) is passed on as the text of its header; a stray `<|sep|>` is
    // dropped. So no event carries a marker.
    void push(std::string_view text, std::vector<MarkupEvent>& events);
    // End of input: whatever was held back, as text.
    void finish(std::vector<MarkupEvent>& events);

private:
    std::string buffer_;      // input not yet turned into events
    size_t search_from_ = 0;  // no marker starts in buffer_ before this
    std::optional<MarkupEvent::Kind> in_tag_;  // Open/Close: buffer_ holds that tag's header so far
};

// Text from which markers were deleted can have them again where its pieces join ("<|op" +
// "en|>"). This passes text through with a U+200B (zero width space) put after the '<' of every
// marker that appears, so none survives; a trailing marker prefix waits for the next text.
class MarkerBreaker {
public:
    std::string push(std::string_view text);
    std::string finish();  // what was held back

private:
    std::string held_;
};
std::string break_markers(std::string_view text);  // all at once

// A tag header: `NAME KEY="VALUE" ...`, values unescaped (&quot; and &amp;, the template's
// escape_attr). nullopt if it does not have that shape.
struct TagHeader {
    std::string name;
    std::map<std::string, std::string> attributes;
};
std::optional<TagHeader> parse_tag_header(std::string_view header);

}  // namespace k3::text
