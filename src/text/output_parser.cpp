#include "text/output_parser.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "text/bounded_json.h"
#include "util/error.h"

namespace k3::text {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

bool is_whitespace(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

// Whether a parameter schema says the value is a string: yes, no, or can't tell (no schema,
// no type, or a type list that mixes string with others).
std::optional<bool> schema_says_string(const json* schema) {
    if (!schema || !schema->is_object() || !schema->contains("type")) return std::nullopt;
    const json& type = (*schema)["type"];
    if (type.is_string()) return type == "string";
    if (!type.is_array()) return std::nullopt;
    const bool has_string = std::find(type.begin(), type.end(), "string") != type.end();
    if (!has_string) return false;
    return type.size() == 1 ? std::optional<bool>(true) : std::nullopt;
}

// The value `text` holds, or nothing when it is not JSON or nests too deep to be dumped again.
std::optional<ordered_json> parsed_json(const std::string& text) {
    try {
        return parse_bounded_json(text);
    } catch (const Error&) {
        return std::nullopt;
    }
}

// An argument's value as the template wrote it: strings raw, everything else as JSON.
ordered_json typed_value(const std::string& raw, const std::string& type_attribute, const json* schema) {
    const bool as_string = schema_says_string(schema).value_or(type_attribute == "string");
    if (as_string) return raw;
    return parsed_json(raw).value_or(ordered_json(raw));
}

std::string dump(const ordered_json& value) {
    return value.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

}  // namespace

OutputParser::OutputParser(OutputStart start, const json& tools)
    : state_(start == OutputStart::Think      ? State::Think
             : start == OutputStart::Response ? State::Response
                                              : State::Between) {
    if (!tools.is_array()) return;
    for (const json& tool : tools) {
        if (!tool.is_object()) continue;
        const json& fn = tool.contains("function") && tool["function"].is_object() ? tool["function"] : tool;
        if (!fn.contains("name") || !fn["name"].is_string()) continue;
        json properties = json::object();
        if (fn.contains("parameters") && fn["parameters"].is_object() && fn["parameters"].contains("properties") &&
            fn["parameters"]["properties"].is_object())
            properties = fn["parameters"]["properties"];
        parameter_schemas_[fn["name"].get<std::string>()] = std::move(properties);
    }
}

OutputDelta OutputParser::push(std::string_view text) {
    std::vector<MarkupEvent> events;
    lexer_.push(text, events);
    for (const MarkupEvent& event : events) on_event(event);
    return std::exchange(delta_, {});
}

OutputDelta OutputParser::finish() {
    std::vector<MarkupEvent> events;
    lexer_.finish(events);
    for (const MarkupEvent& event : events) on_event(event);
    settle_gap();
    if (state_ == State::Call || state_ == State::Argument || state_ == State::JsonArguments) abandon_call();
    const std::string reasoning_rest = reasoning_breaker_.finish(), content_rest = content_breaker_.finish();
    delta_.reasoning += reasoning_rest;
    result_.reasoning += reasoning_rest;
    delta_.content += content_rest;
    result_.content += content_rest;
    return std::exchange(delta_, {});
}

// Both channels go through a MarkerBreaker: deleting markers may join text into new ones.
void OutputParser::emit_reasoning(const std::string& text) {
    const std::string safe = reasoning_breaker_.push(text);
    delta_.reasoning += safe;
    result_.reasoning += safe;
}

void OutputParser::emit_content(const std::string& text) {
    const std::string safe = content_breaker_.push(text);
    delta_.content += safe;
    result_.content += safe;
}

void OutputParser::on_event(const MarkupEvent& event) {
    if (event.kind == MarkupEvent::Kind::Text) return on_text(event.text);
    settle_gap();
    switch (event.kind) {
        case MarkupEvent::Kind::Open: return on_open(event.text);
        case MarkupEvent::Kind::Close: return on_close(event.text);
        default: return on_end_of_message();
    }
}

void OutputParser::on_text(const std::string& text) {
    switch (state_) {
        case State::Think: return emit_reasoning(text);
        case State::Response: return emit_content(text);
        case State::Argument:
        case State::JsonArguments:
            value_ += text;
            call_raw_ += text;
            return;
        default: gap_ += text;  // judged as a whole when the next tag comes
    }
}

// Whitespace between tags is layout; anything else there is content that lost its section
// (inside a call it breaks the call).
void OutputParser::settle_gap() {
    if (gap_.empty()) return;
    std::string gap = std::exchange(gap_, {});
    if (state_ == State::Call) {
        call_raw_ += gap;
        if (!is_whitespace(gap)) abandon_call();
        return;
    }
    if (!is_whitespace(gap)) emit_content(gap);
}

// A tag out of place: its text, without markers, goes to the section's text.
void OutputParser::unexpected(const std::string& text) {
    if (state_ == State::Think) return emit_reasoning(text);
    emit_content(text);
}

void OutputParser::abandon_call() {
    emit_content(std::exchange(call_raw_, {}));
    state_ = State::Tools;
}

void OutputParser::on_open(const std::string& header) {
    const auto tag = parse_tag_header(header);
    const std::string name = tag ? tag->name : std::string();
    switch (state_) {
        case State::Think:
        case State::Between:
        case State::Response:
            if (name == "response" && state_ != State::Response) {
                state_ = State::Response;
            } else if (name == "think" && state_ == State::Between) {
                state_ = State::Think;
            } else if (name == "tools") {
                state_ = State::Tools;
            } else {
                unexpected(header);
            }
            return;
        case State::Tools:
            if (name == "call" && tag->attributes.contains("tool")) {
                state_ = State::Call;
                call_name_ = tag->attributes.at("tool");
                call_raw_ = header;
                call_arguments_ = ordered_json::object();
                has_json_block_ = false;
                json_block_.clear();
            } else {
                unexpected(header);
            }
            return;
        case State::Call:
            if (name == "argument" && tag->attributes.contains("key")) {
                state_ = State::Argument;
                argument_key_ = tag->attributes.at("key");
                argument_type_ = tag->attributes.contains("type") ? tag->attributes.at("type") : "";
            } else if (name == "json" && !has_json_block_) {
                state_ = State::JsonArguments;
            } else {
                abandon_call();
                return on_open(header);
            }
            call_raw_ += header;
            value_.clear();
            return;
        case State::Argument:
        case State::JsonArguments:  // a tag inside a value: the call is broken
            abandon_call();
            return on_open(header);
        default: unexpected(header);
    }
}

void OutputParser::on_close(const std::string& name) {
    switch (state_) {
        case State::Think:
        case State::Response:
        case State::Between:
        case State::Tools:
            if (name == "message") {
                state_ = State::MessageClosed;
            } else if ((name == "think" && state_ == State::Think) || (name == "response" && state_ == State::Response) ||
                       (name == "tools" && state_ == State::Tools)) {
                state_ = State::Between;
            } else {
                unexpected(name);
            }
            return;
        case State::Call:
            if (name != "call") break;
            call_raw_ += name;
            return finish_call();
        case State::Argument:
            if (name != "argument") break;
            call_raw_ += name;
            return finish_argument();
        case State::JsonArguments:
            if (name != "json") break;
            call_raw_ += name;
            has_json_block_ = true;
            json_block_ = std::exchange(value_, {});
            state_ = State::Call;
            return;
        default: return unexpected(name);
    }
    abandon_call();  // a closer that does not match the call's structure
    on_close(name);
}

void OutputParser::on_end_of_message() {
    if (state_ == State::Call || state_ == State::Argument || state_ == State::JsonArguments) abandon_call();
    state_ = State::Ended;
    result_.ended = true;
}

void OutputParser::finish_argument() {
    const json* schema = nullptr;
    if (auto tool = parameter_schemas_.find(call_name_); tool != parameter_schemas_.end())
        if (auto parameter = tool->find(argument_key_); parameter != tool->end()) schema = &*parameter;
    call_arguments_[argument_key_] = typed_value(break_markers(value_), argument_type_, schema);
    value_.clear();
    state_ = State::Call;
}

void OutputParser::finish_call() {
    ToolCall call{call_name_, {}};
    if (has_json_block_) {
        json_block_ = break_markers(json_block_);
        ordered_json block = parsed_json(json_block_).value_or(ordered_json());
        if (block.is_object()) {
            for (auto& [key, value] : call_arguments_.items()) block[key] = value;
            call.arguments = dump(block);
        } else {
            call.arguments = json_block_;  // not a JSON object: passed on as the model wrote it
        }
    } else {
        call.arguments = dump(call_arguments_);
    }
    call_raw_.clear();
    state_ = State::Tools;
    delta_.tool_calls.push_back(call);
    result_.tool_calls.push_back(std::move(call));
}

ParsedOutput parse_output(std::string_view text, OutputStart start, const json& tools) {
    OutputParser parser(start, tools);
    parser.push(text);
    parser.finish();
    return parser.result();
}

}  // namespace k3::text
