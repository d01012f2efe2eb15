// Parsing what K3 generates (k3-architecture.md §11) into reasoning, content and tool calls,
// incrementally as text streams in. The shape, after a generation prompt that opened the think
// section:
//
//   REASONING<|close|>think<|sep|><|open|>response<|sep|>CONTENT<|close|>response<|sep|>
//   <|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
//     <|open|>argument key="K" type="T"<|sep|>VALUE<|close|>argument<|sep|>...     (or)
//     <|open|>json type="object"<|sep|>{...}<|close|>json<|sep|>
//   <|close|>call<|sep|>...<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>
//
// Whatever does not fit (a tag out of place, text between sections, a call cut off or broken)
// degrades to content: the raw text with the four markers deleted. No marker ever reaches the
// reasoning, the content or a tool call. Pushing the text in any chunks gives the same result
// as parsing it at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/output_markup.h"

namespace k3::text {

struct ToolCall {
    std::string name;
    std::string arguments;  // a JSON object, e.g. {"city":"Paris","days":3}
    bool operator==(const ToolCall&) const = default;
};

struct ParsedOutput {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;
    bool ended = false;  // <|end_of_msg|> was seen
    bool operator==(const ParsedOutput&) const = default;
};

// What one push completed: text to append, calls that closed.
struct OutputDelta {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;
    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// Where the generation prompt left the model.
enum class OutputStart {
    Think,     // after <|open|>think<|sep|> (thinking on, the template's default)
    Response,  // after <|open|>response<|sep|> (thinking off)
    Message,   // after <|open|>message role="assistant"<|sep|> only
};

class OutputParser {
public:
    // `tools`: the request's tool list (OpenAI form, [{"type":"function","function":{"name",
    // "parameters"}}], or bare {"name","parameters"} entries; null if none). A parameter whose
    // schema type is "string" keeps its value as a string; others are parsed as JSON literals
    // (a value that is not valid JSON stays a string). Undeclared parameters follow the
    // argument's own type attribute.
    explicit OutputParser(OutputStart start = OutputStart::Think,
                          const nlohmann::json& tools = nullptr);

    OutputDelta push(std::string_view text);
    OutputDelta finish();  // end of the stream: flushes held-back text, degrades an open call
    const ParsedOutput& result() const { return result_; }

private:
    enum class State { Think, Between, Response, Tools, Call, Argument, JsonArguments, MessageClosed, Ended };

    void on_event(const MarkupEvent& event);
    void on_text(const std::string& text);
    void on_open(const std::string& header);
    void on_close(const std::string& name);
    void on_end_of_message();
    void settle_gap();
    void unexpected(const std::string& text);
    void abandon_call();
    void finish_argument();
    void finish_call();
    void emit_reasoning(const std::string& text);
    void emit_content(const std::string& text);

    nlohmann::json parameter_schemas_ = nlohmann::json::object();  // tool name -> properties
    MarkupLexer lexer_;
    MarkerBreaker reasoning_breaker_, content_breaker_;
    State state_;
    std::string gap_;  // text between structural tags, judged when the next tag comes
    // The call being read: its tool, its arguments so far, and its raw text (markers deleted)
    // for when it has to degrade to content.
    std::string call_name_, call_raw_, argument_key_, argument_type_, value_, json_block_;
    nlohmann::ordered_json call_arguments_;
    bool has_json_block_ = false;
    OutputDelta delta_;
    ParsedOutput result_;
};

// One-shot: the whole text at once.
ParsedOutput parse_output(std::string_view text, OutputStart start = OutputStart::Think,
                          const nlohmann::json& tools = nullptr);

}  // namespace k3::text
