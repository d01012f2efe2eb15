// libFuzzer target: K3 output parsing. The first byte picks where the output starts and a
// chunk size; the rest is the model's text. Checks that streaming in chunks gives the one-shot
// result, that the deltas add up to it, and that no marker reaches reasoning, content or calls.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "text/output_parser.h"

#include "fuzz_support.h"

namespace {

using k3::fuzz::require;

bool has_marker(std::string_view text) {
    using namespace k3::text;
    for (std::string_view marker : {kOpenMarker, kCloseMarker, kSepMarker, kEndOfMessageMarker})
        if (text.find(marker) != std::string_view::npos) return true;
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace k3::text;
    if (size == 0) return 0;
    const OutputStart start = static_cast<OutputStart>(data[0] % 3);
    const size_t chunk = 1 + (data[0] >> 2) % 16;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    static const nlohmann::json tools = nlohmann::json::parse(
        R"([{"type":"function","function":{"name":"f","parameters":{"properties":{"s":{"type":"string"},"n":{"type":"integer"}}}}}])");

    const ParsedOutput once = parse_output(text, start, tools);
    OutputParser parser(start, tools);
    ParsedOutput sum;
    auto add = [&](const OutputDelta& d) {
        sum.reasoning += d.reasoning;
        sum.content += d.content;
        sum.tool_calls.insert(sum.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
    };
    for (size_t at = 0; at < text.size(); at += chunk) add(parser.push(std::string_view(text).substr(at, chunk)));
    add(parser.finish());
    sum.ended = parser.result().ended;
    require(sum == once);
    require(parser.result() == once);
    require(!has_marker(once.reasoning) && !has_marker(once.content));
    for (const ToolCall& call : once.tool_calls) require(!has_marker(call.name) && !has_marker(call.arguments));
    return 0;
}
