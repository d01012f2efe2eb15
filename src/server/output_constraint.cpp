#include "server/output_constraint.h"

#include <array>
#include <span>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "text/output_markup.h"
#include "util/error.h"

namespace k3::server {

namespace {

// The markers as grammar symbols: <|open|>, <|close|>, <|sep|> are \U00110000, \U00110001 and
// \U00110002 (past Unicode, so no text spells them); free text ('.') never matches them.
constexpr std::array<std::string_view, 3> kMarkers = {text::kOpenMarker, text::kCloseMarker, text::kSepMarker};
constexpr uint32_t kFirstMarkerSymbol = 0x110000;
constexpr const char* kOpen = R"("\U00110000")";
constexpr const char* kClose = R"("\U00110001")";
constexpr const char* kSep = R"("\U00110002")";
constexpr const char* kFreeText = ".*";

std::shared_ptr<const grammar::Grammar> gbnf(const std::string& text) { return grammar::parse_gbnf(text); }

}  // namespace

OutputConstraint::OutputConstraint(const text::Tokenizer& tokenizer, std::optional<std::string> default_grammar)
    : tokenizer_(tokenizer) {
    if (default_grammar) {
        try {
            default_grammar_ = grammar::parse_gbnf(*default_grammar);
        } catch (const Error& e) {
            throw Error(std::string("--grammar-file: ") + e.what());
        }
    }
}

std::shared_ptr<const grammar::TokenVocabulary> OutputConstraint::vocabulary() const {
    std::call_once(vocabulary_once_, [&] {
        std::vector<std::string> bytes(size_t(tokenizer_.n_vocab()));
        for (int32_t id = 0; id < tokenizer_.n_vocab(); ++id)
            if (!tokenizer_.is_special(id)) bytes[size_t(id)] = std::string(tokenizer_.token_bytes(id));
        std::vector<grammar::TokenVocabulary::Symbol> symbols;
        for (size_t m = 0; m < kMarkers.size(); ++m)
            if (std::optional<int32_t> id = tokenizer_.special_id(kMarkers[m]))
                symbols.push_back({*id, kFirstMarkerSymbol + uint32_t(m)});
        vocabulary_ = std::make_shared<const grammar::TokenVocabulary>(std::move(bytes), tokenizer_.end_of_generation_ids(),
                                                                       std::move(symbols));
    });
    return vocabulary_;
}

std::shared_ptr<const grammar::Grammar> OutputConstraint::for_request(const GenerationParams& params,
                                                                      const ChatInput* chat) const {
    std::shared_ptr<const grammar::Grammar> answer;
    try {
        if (params.grammar) answer = grammar::parse_gbnf(*params.grammar);
        else if (params.json_schema) answer = grammar::json_schema_grammar(*params.json_schema);
        else answer = default_grammar_;
        // The start state is built here, so that a grammar too ambiguous from its first code point
        // on (MatcherLimits::max_stacks) is refused before generation.
        if (answer && answer != default_grammar_) grammar::Matcher check(answer);
    } catch (const Error& e) {
        throw ApiError(400, e.what(), params.grammar ? "invalid_grammar" : "invalid_json_schema");
    }
    const bool forced_call = chat && !chat->forced_tools.empty();
    if (forced_call && (params.grammar || params.json_schema))
        throw ApiError(400, "a forced tool call ('tool_choice') cannot be combined with 'grammar', 'json_schema' or a JSON 'response_format'",
                       "invalid_value");
    if (!chat || (!answer && !chat->tool_calls_forbidden && !forced_call)) return answer;

    // Chat: [reasoning <|close|>think<|sep|><|open|>response<|sep|>] CONTENT <|close|>response<|sep|>
    // <|close|>message<|sep|>, then the end-of-message token (output_parser.h's shape, with no
    // tools section). CONTENT is the answer grammar, or free text.
    std::vector<std::shared_ptr<const grammar::Grammar>> parts;
    const std::string open_response = std::string(kClose) + " \"think\" " + kSep + " " + kOpen + " \"response\" " + kSep;
    if (chat->thinking) parts.push_back(gbnf("root ::= " + std::string(kFreeText) + " " + open_response));
    if (!forced_call || chat->text_before_forced_call)
        parts.push_back(answer ? answer : gbnf(std::string("root ::= ") + kFreeText));
    parts.push_back(gbnf(std::string("root ::= ") + kClose + " \"response\" " + kSep));
    if (forced_call) {
        parts.push_back(gbnf(std::string("root ::= ") + kOpen + " \"tools\" " + kSep));
        parts.push_back(tool_call(chat->forced_tools));
        parts.push_back(gbnf(std::string("root ::= ") + kClose + " \"tools\" " + kSep));
    }
    parts.push_back(gbnf(std::string("root ::= ") + kClose + " \"message\" " + kSep));
    return grammar::concatenate(parts);
}

// One call of any of `tools`, as the template renders one with JSON arguments:
// <|open|>call tool="NAME" index="1"<|sep|><|open|>json type="object"<|sep|>{...}<|close|>json<|sep|><|close|>call<|sep|>
std::shared_ptr<const grammar::Grammar> OutputConstraint::tool_call(const Json& tools) const {
    std::vector<std::shared_ptr<const grammar::Grammar>> calls;
    for (const Json& tool : tools) {
        const Json& function = tool["function"];
        std::string name = function["name"].get<std::string>(), escaped;  // the template's escape_attr
        for (char c : name) escaped += c == '&' ? "&amp;" : c == '"' ? "&quot;" : std::string(1, c);
        Json parameters = function.contains("parameters") && function["parameters"].is_object() ? function["parameters"]
                                                                                              : Json{{"type", "object"}};
        std::shared_ptr<const grammar::Grammar> arguments;
        try {
            arguments = grammar::json_schema_grammar(parameters);
        } catch (const Error& e) {
            throw ApiError(400, "tool '" + name + "' parameters: " + e.what(), "invalid_json_schema");
        }
        const std::shared_ptr<const grammar::Grammar> call[] = {
            gbnf(std::string("root ::= ") + kOpen + " " + grammar::gbnf_literal("call tool=\"" + escaped + "\" index=\"1\"") + " " +
                 kSep + " " + kOpen + " \"json type=\\\"object\\\"\" " + kSep),
            arguments,
            gbnf(std::string("root ::= ") + kClose + " \"json\" " + kSep + " " + kClose + " \"call\" " + kSep)};
        calls.push_back(grammar::concatenate(call));
    }
    return grammar::alternatives(calls);
}

}  // namespace k3::server
