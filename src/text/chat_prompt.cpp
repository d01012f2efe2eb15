#include "text/chat_prompt.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "text/bounded_json.h"
#include "util/error.h"

namespace k3::text {
namespace {

// A shielded special-token text is rendered as U+E000 <index> U+E001 (private-use code points),
// so that the template carries it through untouched and it can be found again afterwards.
constexpr std::string_view kOpen = "\xEE\x80\x80";
constexpr std::string_view kClose = "\xEE\x80\x81";

// Replaces every special-token text in the strings of `value` (and every kOpen) by a
// placeholder, appending the original texts to `shielded`. `depth` counts the containers
// around `value`, checked before descending so that no input can exhaust the stack.
void shield(nlohmann::ordered_json& value, const Tokenizer& tokenizer, std::vector<std::string>& shielded,
            int depth = 0) {
    if (value.is_structured()) {
        if (depth + 1 > kMaxNesting)
            throw Error("template variables nest deeper than " + std::to_string(kMaxNesting) + " levels");
        for (nlohmann::ordered_json& item : value) shield(item, tokenizer, shielded, depth + 1);
        return;
    }
    if (!value.is_string()) return;
    const std::string& text = value.get_ref<const std::string&>();
    std::string out;
    bool changed = false;
    for (size_t at = 0; at < text.size();) {
        // A kOpen already in the text is shielded too, so that no text can pose as a placeholder.
        std::string_view special = tokenizer.special_text_at(text, at);
        if (special.empty() && std::string_view(text).substr(at).starts_with(kOpen)) special = kOpen;
        if (special.empty()) {
            out += text[at++];
            continue;
        }
        out.append(kOpen).append(std::to_string(shielded.size())).append(kClose);
        shielded.emplace_back(special);
        at += special.size();
        changed = true;
    }
    if (changed) value = std::move(out);
}

// The placeholder index written at `at` (just past kOpen) up to `close`, or -1 if it is not one.
long placeholder_index(std::string_view rendered, size_t at, size_t close, size_t n_shielded) {
    if (close == std::string_view::npos || close == at || close - at > 9) return -1;
    long index = 0;
    for (size_t i = at; i < close; ++i) {
        if (rendered[i] < '0' || rendered[i] > '9') return -1;
        index = index * 10 + (rendered[i] - '0');
    }
    return size_t(index) < n_shielded ? index : -1;
}

void append(std::vector<int32_t>& ids, const std::vector<int32_t>& more) { ids.insert(ids.end(), more.begin(), more.end()); }

}  // namespace

ChatPrompt render_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              nlohmann::ordered_json variables) {
    std::vector<std::string> shielded;
    shield(variables, tokenizer, shielded);
    const std::string rendered = chat_template.render(variables);
    ChatPrompt prompt;
    if (shielded.empty()) {
        prompt.ids = tokenizer.encode(rendered, /*parse_special=*/true);
        prompt.text = rendered;
        return prompt;
    }
    size_t markup_start = 0;
    for (size_t at = rendered.find(kOpen); at != std::string::npos; at = rendered.find(kOpen, at)) {
        const size_t digits = at + kOpen.size();
        const size_t close = rendered.find(kClose, digits);
        const long index = placeholder_index(rendered, digits, close, shielded.size());
        if (index < 0) {
            at = digits;
            continue;
        }
        const std::string_view markup = std::string_view(rendered).substr(markup_start, at - markup_start);
        append(prompt.ids, tokenizer.encode(markup, /*parse_special=*/true));
        append(prompt.ids, tokenizer.encode(shielded[size_t(index)], /*parse_special=*/false));
        prompt.text.append(markup).append(shielded[size_t(index)]);
        at = markup_start = close + kClose.size();
    }
    const std::string_view tail = std::string_view(rendered).substr(markup_start);
    append(prompt.ids, tokenizer.encode(tail, /*parse_special=*/true));
    prompt.text.append(tail);
    return prompt;
}

std::vector<int64_t> message_boundaries(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& variables, std::span<const int32_t> prompt) {
    std::vector<int64_t> boundaries;
    const nlohmann::ordered_json& messages = variables.at("messages");
    const size_t n = messages.size();
    std::vector<size_t> heads;  // how many messages each boundary follows
    if (n >= 2) heads.push_back(1);
    if (n >= 3) heads.push_back(n - 1);
    for (size_t head : heads) {
        nlohmann::ordered_json prefix = variables;
        prefix["messages"] = nlohmann::ordered_json(messages.begin(), messages.begin() + std::ptrdiff_t(head));
        prefix["add_generation_prompt"] = false;
        const std::vector<int32_t> ids = render_chat_prompt(chat_template, tokenizer, std::move(prefix)).ids;
        if (ids.size() < prompt.size() && std::equal(ids.begin(), ids.end(), prompt.begin()))
            boundaries.push_back(int64_t(ids.size()));
    }
    return boundaries;
}

}  // namespace k3::text
