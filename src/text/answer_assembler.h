// Turns sampled token ids into the pieces of an answer as they come, for `k3 run`, `k3 chat` and
// every server endpoint alike: well-formed UTF-8 (StreamingDetokenizer), cut at the first stop
// string (StopStringFilter), and for a chat split into reasoning, content and tool calls
// (OutputParser). End-of-generation and other control tokens add no text unless show_special;
// K3's markup markers always reach the chat parser, which reads and removes them.
//
//   text::AnswerAssembler answer(tokenizer, options);  // options.chat = OutputStart::Think
//   show(answer.push(id));   // then stop if answer.stopped()
//   show(answer.finish());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/output_parser.h"
#include "text/stop_strings.h"
#include "text/tokenizer.h"

namespace k3::text {

struct AnswerOptions {
    std::vector<std::string> stop_strings;
    bool show_special = false;          // control tokens' text in the answer
    std::optional<OutputStart> chat;    // where the generation prompt left the model; unset: plain text
    nlohmann::json tools = nullptr;     // the request's tools, for the chat parser (output_parser.h)
};

class AnswerAssembler {
public:
    AnswerAssembler(const Tokenizer& tokenizer, AnswerOptions options);

    // What the token adds: plain text goes to `content`; a chat's parts to their fields.
    OutputDelta push(int32_t id);
    // At the end of generation: the text held back (an unfinished character, a possible stop
    // string's start, a chat's open section).
    OutputDelta finish();

    bool stopped() const { return stops_.stopped(); }  // a stop string completed
    const std::string& matched_stop() const { return stops_.matched(); }
    const std::string& text() const { return text_; }  // the answer as generated, before the chat parser
    const ParsedOutput& parsed() const { return parsed_; }  // every delta so far, concatenated

private:
    OutputDelta route(const std::string& text);
    void record(const OutputDelta& delta);

    const Tokenizer& tokenizer_;
    StreamingDetokenizer detokenizer_;
    StopStringFilter stops_;
    bool show_special_;
    std::optional<OutputParser> parser_;
    std::string text_;
    ParsedOutput parsed_;
};

}  // namespace k3::text
