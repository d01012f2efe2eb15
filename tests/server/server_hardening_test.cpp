// `k3 serve` against hostile requests (issue #18): none of them may kill, stall or bloat the
// server, and each is answered with an error that says what is wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

const std::string kModel = fixture("tiny-k3/model.gguf");

std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A chat request with `nest` spliced into one of the places a chat template sees.
std::vector<std::pair<std::string, std::string>> requests_nesting(const std::string& nest) {
    const std::string user = R"({"role": "user", "content": "hi"})";
    return {
        {"extra message field", R"({"messages": [{"role": "user", "content": "hi", "extra": )" + nest + "}]}"},
        {"tools[].function.parameters",
         R"({"messages": [)" + user + R"(], "tools": [{"type": "function", "function": {"name": "f", "parameters": )" +
             nest + "}}]}"},
        {"chat_template_kwargs", R"({"messages": [)" + user + R"(], "chat_template_kwargs": {"x": )" + nest + "}}"},
        {"tool_choice", R"({"messages": [)" + user + R"(], "tool_choice": {"type": "function", "function": )" + nest +
                            "}}"},
        {"response_format",
         R"({"messages": [)" + user + R"(], "response_format": {"type": "json_schema", "json_schema": )" + nest + "}}"},
        {"tool-call arguments",
         R"({"messages": [)" + user +
             R"(, {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function",
                 "function": {"name": "f", "arguments": )" + nest + "}}]}]}"},
    };
}

TEST(ServerHardening, DeeplyNestedJsonInTemplateVisibleFieldsIsRefused) {
    ServerProcess server(kModel, {"--ctx-size", "256"});
    for (size_t depth : {size_t{30000}, size_t{200000}}) {
        for (const auto& [field, body] : requests_nesting(nested_arrays(depth))) {
            const HttpReply reply = http_request(server.port(), "POST", "/v1/chat/completions", body);
            EXPECT_EQ(reply.status, 400) << field << " at depth " << depth << ": " << reply.body;
            EXPECT_NE(reply.body.find("nests deeper than 1000 levels"), std::string::npos) << field << ": " << reply.body;
            ASSERT_EQ(http_request(server.port(), "GET", "/health").status, 200) << "after " << field << " at " << depth;
        }
    }
    // Nesting within the bound still renders (the template shows the extra field or ignores it).
    const std::string body = requests_nesting(nested_arrays(50))[0].second;
    const json request = json::parse(body);
    json with_limit = request;
    with_limit["max_tokens"] = 1;
    EXPECT_EQ(http_request(server.port(), "POST", "/v1/chat/completions", with_limit.dump()).status, 200);
    EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace k3::testing
