// K3 output parsing on outputs written in the template's markup (templates/Kimi-K3.jinja), with
// expected values worked out by hand. Every case is also checked streamed byte by byte and in
// random chunks, and cut at every byte.
#include "text/output_parser.h"

#include <gtest/gtest.h>

#include <random>

namespace k3::text {
namespace {

using nlohmann::json;

// The tools of fixtures/chat/chat_cases.json ("tools_call_and_result").
const json& weather_tools() {
    static const json tools = json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"},
          "top_k": {"type": "integer", "default": 3}}, "required": ["query"]}}}])");
    return tools;
}

const std::string kEnd = "<|close|>message<|sep|><|end_of_msg|>";

void expect_no_markers(const ParsedOutput& out, const std::string& where) {
    for (std::string_view marker : {kOpenMarker, kCloseMarker, kSepMarker, kEndOfMessageMarker}) {
        EXPECT_EQ(out.reasoning.find(marker), std::string::npos) << where << ": reasoning has " << marker;
        EXPECT_EQ(out.content.find(marker), std::string::npos) << where << ": content has " << marker;
        for (const ToolCall& call : out.tool_calls) {
            EXPECT_EQ(call.name.find(marker), std::string::npos) << where;
            EXPECT_EQ(call.arguments.find(marker), std::string::npos) << where;
        }
    }
}

// Feeds `text` in the given chunk sizes (cycled) and checks that the deltas add up to the result.
ParsedOutput parse_streamed(const std::string& text, OutputStart start, const json& tools,
                            const std::vector<size_t>& chunk_sizes) {
    OutputParser parser(start, tools);
    ParsedOutput from_deltas;
    auto add = [&](const OutputDelta& d) {
        from_deltas.reasoning += d.reasoning;
        from_deltas.content += d.content;
        from_deltas.tool_calls.insert(from_deltas.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
    };
    size_t at = 0;
    for (size_t i = 0; at < text.size(); ++i) {
        const size_t n = std::min(chunk_sizes[i % chunk_sizes.size()], text.size() - at);
        add(parser.push(std::string_view(text).substr(at, n)));
        at += n;
    }
    add(parser.finish());
    from_deltas.ended = parser.result().ended;
    EXPECT_EQ(from_deltas, parser.result()) << "deltas do not add up to the result";
    return parser.result();
}

// One-shot parse, checked against streaming byte by byte and in random chunks.
ParsedOutput parse_all_ways(const std::string& text, OutputStart start = OutputStart::Think,
                            const json& tools = weather_tools()) {
    const ParsedOutput once = parse_output(text, start, tools);
    EXPECT_EQ(parse_streamed(text, start, tools, {1}), once) << "byte by byte: " << text;
    std::mt19937 rng(static_cast<uint32_t>(text.size()));
    std::vector<size_t> chunks;
    for (int i = 0; i < 16; ++i) chunks.push_back(std::uniform_int_distribution<size_t>(1, 12)(rng));
    EXPECT_EQ(parse_streamed(text, start, tools, chunks), once) << "random chunks: " << text;
    expect_no_markers(once, text);
    return once;
}

// Every prefix of `text` parses the same all ways, leaks no marker, and its completed tool
// calls are the first calls of the whole text.
void check_every_truncation(const std::string& text, OutputStart start = OutputStart::Think) {
    const ParsedOutput full = parse_output(text, start, weather_tools());
    for (size_t n = 0; n <= text.size(); ++n) {
        const std::string prefix = text.substr(0, n);
        const ParsedOutput part = parse_all_ways(prefix, start);
        ASSERT_LE(part.tool_calls.size(), full.tool_calls.size()) << prefix;
        for (size_t i = 0; i < part.tool_calls.size(); ++i) ASSERT_EQ(part.tool_calls[i], full.tool_calls[i]) << prefix;
        if (::testing::Test::HasFailure()) return;
    }
}

TEST(OutputParser, ReasoningThenContent) {
    const std::string text = "The user greets me.<|close|>think<|sep|><|open|>response<|sep|>Hello! How can I help?<|close|>response<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text);
    EXPECT_EQ(out.reasoning, "The user greets me.");
    EXPECT_EQ(out.content, "Hello! How can I help?");
    EXPECT_TRUE(out.tool_calls.empty());
    EXPECT_TRUE(out.ended);
}

TEST(OutputParser, ThinkingOffStartsInTheResponse) {
    const std::string text = "Paris: 18 C.<|close|>response<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text, OutputStart::Response);
    EXPECT_EQ(out.reasoning, "");
    EXPECT_EQ(out.content, "Paris: 18 C.");
}

TEST(OutputParser, StartAfterTheMessageTag) {
    const std::string text = "<|open|>think<|sep|>hmm<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text, OutputStart::Message);
    EXPECT_EQ(out.reasoning, "hmm");
    EXPECT_EQ(out.content, "ok");
}

TEST(OutputParser, MissingThinkCloserEndsReasoningAtTheResponse) {
    const ParsedOutput out = parse_all_ways("plan<|open|>response<|sep|>answer<|close|>response<|sep|>" + kEnd);
    EXPECT_EQ(out.reasoning, "plan");
    EXPECT_EQ(out.content, "answer");
}

TEST(OutputParser, ToolCallsTypedByTheToolSchema) {
    // As the template renders an assistant turn with tool calls (chat_cases.json).
    const std::string text =
        "I should call the weather tool.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>"
        "<|open|>tools<|sep|>"
        "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"city\" type=\"string\"<|sep|>Beijing<|close|>argument<|sep|>"
        "<|open|>argument key=\"unit\" type=\"string\"<|sep|>celsius<|close|>argument<|sep|>"
        "<|close|>call<|sep|>"
        "<|open|>call tool=\"search\" index=\"2\"<|sep|>"
        "<|open|>argument key=\"query\" type=\"string\"<|sep|>2024<|close|>argument<|sep|>"
        "<|open|>argument key=\"top_k\" type=\"number\"<|sep|>2<|close|>argument<|sep|>"
        "<|open|>argument key=\"safe\" type=\"boolean\"<|sep|>true<|close|>argument<|sep|>"
        "<|open|>argument key=\"filters\" type=\"object\"<|sep|>{\"lang\": \"en\", \"sites\": [\"a.org\"]}<|close|>argument<|sep|>"
        "<|open|>argument key=\"extra\" type=\"null\"<|sep|>null<|close|>argument<|sep|>"
        "<|close|>call<|sep|>"
        "<|close|>tools<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text);
    EXPECT_EQ(out.reasoning, "I should call the weather tool.");
    EXPECT_EQ(out.content, "");
    ASSERT_EQ(out.tool_calls.size(), 2u);
    EXPECT_EQ(out.tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(out.tool_calls[0].arguments), json::parse(R"({"city": "Beijing", "unit": "celsius"})"));
    EXPECT_EQ(out.tool_calls[1].name, "search");
    // "query" is declared a string, so "2024" stays a string; the undeclared ones follow their
    // type attribute.
    EXPECT_EQ(json::parse(out.tool_calls[1].arguments),
              json::parse(R"({"query": "2024", "top_k": 2, "safe": true, "filters": {"lang": "en", "sites": ["a.org"]}, "extra": null})"));
    // Keys keep the order the model wrote them in.
    EXPECT_EQ(out.tool_calls[0].arguments, R"({"city":"Beijing","unit":"celsius"})");
}

TEST(OutputParser, StringParameterKeepsJsonLookingText) {
    const std::string text =
        "<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"search\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"query\" type=\"object\"<|sep|>{\"a\": 1}<|close|>argument<|sep|>"
        "<|close|>call<|sep|><|close|>tools<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text);
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(json::parse(out.tool_calls[0].arguments), json({{"query", "{\"a\": 1}"}}));
}

TEST(OutputParser, NonStringParameterThatIsNotJsonStaysAString) {
    const std::string text =
        "<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"search\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"top_k\" type=\"number\"<|sep|>three<|close|>argument<|sep|>"
        "<|close|>call<|sep|><|close|>tools<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text);
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(json::parse(out.tool_calls[0].arguments), json({{"top_k", "three"}}));
}

TEST(OutputParser, JsonBlockArgumentsAndEscapedToolName) {
    const std::string text =
        "<|close|>think<|sep|><|open|>response<|sep|>Let me check.<|close|>response<|sep|><|open|>tools<|sep|>"
        "<|open|>call tool=\"a&amp;b &quot;x&quot;\" index=\"1\"<|sep|>"
        "<|open|>json type=\"object\"<|sep|>{\"city\": \"Paris\"}<|close|>json<|sep|><|close|>call<|sep|>"
        "<|close|>tools<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text);
    EXPECT_EQ(out.content, "Let me check.");
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(out.tool_calls[0].name, "a&b \"x\"");
    EXPECT_EQ(json::parse(out.tool_calls[0].arguments), json({{"city", "Paris"}}));
}

TEST(OutputParser, ToolsWithoutAResponseSectionAndNoArguments) {
    const std::string text =
        "<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_time\" index=\"1\"<|sep|><|close|>call<|sep|>"
        "<|close|>tools<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text);
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(out.tool_calls[0], (ToolCall{"get_time", "{}"}));
}

TEST(OutputParser, BrokenCallDegradesToContentAndTheNextCallStillParses) {
    // The first call's argument is interrupted by a new call.
    const std::string text =
        "<|close|>think<|sep|><|open|>tools<|sep|>"
        "<|open|>call tool=\"search\" index=\"1\"<|sep|><|open|>argument key=\"query\" type=\"string\"<|sep|>cats"
        "<|open|>call tool=\"search\" index=\"2\"<|sep|><|open|>argument key=\"query\" type=\"string\"<|sep|>dogs<|close|>argument<|sep|><|close|>call<|sep|>"
        "<|close|>tools<|sep|>" + kEnd;
    const ParsedOutput out = parse_all_ways(text);
    EXPECT_EQ(out.content, "call tool=\"search\" index=\"1\"argument key=\"query\" type=\"string\"cats");
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(json::parse(out.tool_calls[0].arguments), json({{"query", "dogs"}}));
}

TEST(OutputParser, TruncatedCallDegradesToContent) {
    const ParsedOutput out = parse_all_ways(
        "ok<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"search\" index=\"1\"<|sep|><|open|>argument key=\"query\" type=\"string\"<|sep|>ca");
    EXPECT_EQ(out.reasoning, "ok");
    EXPECT_EQ(out.content, "call tool=\"search\" index=\"1\"argument key=\"query\" type=\"string\"ca");
    EXPECT_TRUE(out.tool_calls.empty());
    EXPECT_FALSE(out.ended);
}

TEST(OutputParser, MalformedMarkupNeverLeaksMarkers) {
    // A stray <|sep|>, a tag that never gets its <|sep|>, an unknown tag, text between sections.
    const ParsedOutput out = parse_all_ways(
        "a<|sep|>b<|close|>think<|sep|>loose text<|open|>response<|sep|>x<|open|>bogus<|sep|>y<|open|>half"
        "<|close|>response<|sep|>" + kEnd + "trailing");
    EXPECT_EQ(out.reasoning, "ab");
    EXPECT_EQ(out.content, "loose textxbogusyhalftrailing");
    EXPECT_TRUE(out.ended);
}

TEST(OutputParser, MarkerPrefixesInTextAreText) {
    const ParsedOutput out = parse_all_ways("a <| b <|clo<|close|>think<|sep|><|open|>response<|sep|>x <|sep y<|open");
    EXPECT_EQ(out.reasoning, "a <| b <|clo");
    EXPECT_EQ(out.content, "x <|sep y<|open");
}

TEST(OutputParser, TextJoinedAcrossADeletedMarkerCannotFormOne) {
    // "<<|open" + "<|open|>" (a tag that never gets its <|sep|>) + "|>..." would read "<<|open|>..."
    // once the marker is gone; a zero width space after '<' keeps it plain text (found by fuzzing).
    const ParsedOutput out = parse_all_ways("<<|open<|open|>|><|x|");
    EXPECT_EQ(out.reasoning, "<<\u200B|open|><|x|");
    const std::string call = "<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"search\" index=\"1\"<|sep|>"
                             "<|open|>argument key=\"query\" type=\"string\"<|sep|>a<|op<|close|>en|><|close|>argument<|sep|>";
    const ParsedOutput broken = parse_all_ways(call);
    EXPECT_EQ(broken.content, "call tool=\"search\" index=\"1\"argument key=\"query\" type=\"string\"a<\u200B|open|>argument");
}

TEST(OutputParser, MultiByteCharactersAreNeverSplitAcrossDeltas) {
    OutputParser parser(OutputStart::Response);
    const std::string text = "\xE4\xB8\x96\xE7\x95\x8C";  // 世界
    std::string content;
    for (char c : text) {
        const OutputDelta d = parser.push(std::string(1, c));
        EXPECT_TRUE(d.content.empty() || d.content == "\xE4\xB8\x96" || d.content == "\xE7\x95\x8C");
        content += d.content;
    }
    content += parser.finish().content;
    EXPECT_EQ(content, text);
}

TEST(OutputParser, EveryTruncationOfACompleteTurn) {
    check_every_truncation(
        "Weather, then search.<|close|>think<|sep|><|open|>response<|sep|>On it.<|close|>response<|sep|>"
        "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"city\" type=\"string\"<|sep|>Oslo<|close|>argument<|sep|><|close|>call<|sep|>"
        "<|open|>call tool=\"search\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>{\"query\": \"fjords\", \"top_k\": 1}"
        "<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|>" + kEnd);
    check_every_truncation("Hi.<|close|>response<|sep|>" + kEnd, OutputStart::Response);
}

TEST(OutputParser, RandomMarkupSoupParsesTheSameAllWays) {
    const std::vector<std::string> pieces = {
        "<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>", "think", "response", "tools", "message",
        "call tool=\"search\" index=\"1\"", "argument key=\"query\" type=\"string\"", "argument key=\"top_k\" type=\"number\"",
        "json type=\"object\"", "call", "argument", "json", "{\"a\": 1}", "7", "hello", " ", "\n", "<|", "|>", "<|clo", "世界",
    };
    std::mt19937 rng(5);
    std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1), length(0, 40);
    for (int trial = 0; trial < 300; ++trial) {
        std::string text;
        for (size_t n = length(rng); n > 0; --n) text += pieces[pick(rng)];
        for (OutputStart start : {OutputStart::Think, OutputStart::Response, OutputStart::Message}) parse_all_ways(text, start);
        if (HasFailure()) {
            ADD_FAILURE() << "text: " << text;
            return;
        }
    }
}

}  // namespace
}  // namespace k3::text
