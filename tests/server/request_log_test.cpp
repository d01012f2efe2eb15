// request_log_line: the fields of the text and JSON lines, and that a client's path cannot break
// a line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/request_log.h"

namespace k3::server {
namespace {

TEST(RequestLog, TextLineNamesMethodPathStatusTokensAndTime) {
    EXPECT_EQ(request_log_line(RequestLogFormat::text, {"POST", "/v1/chat/completions", 200, RequestTokens{12, 34}, 56.78}),
              "k3 serve: POST /v1/chat/completions 200 prompt=12 completion=34 56.8ms");
    EXPECT_EQ(request_log_line(RequestLogFormat::text, {"GET", "/health", 200, std::nullopt, 0.04}),
              "k3 serve: GET /health 200 0.0ms");
}

TEST(RequestLog, JsonLineHasTheSameFields) {
    const auto line = nlohmann::json::parse(
        request_log_line(RequestLogFormat::json, {"POST", "/v1/completions", 400, RequestTokens{3, 0}, 1.26}));
    EXPECT_EQ(line, nlohmann::json({{"method", "POST"}, {"path", "/v1/completions"}, {"status", 400},
                                    {"prompt_tokens", 3}, {"completion_tokens", 0}, {"ms", 1.3}}));
    EXPECT_FALSE(nlohmann::json::parse(request_log_line(RequestLogFormat::json, {"GET", "/", 200, std::nullopt, 0}))
                     .contains("prompt_tokens"));
}

TEST(RequestLog, ControlBytesInAPathCannotForgeALine) {
    const std::string line =
        request_log_line(RequestLogFormat::text, {"GET", "/x\nk3 serve: GET /admin 200\r", 404, std::nullopt, 1});
    EXPECT_EQ(line, "k3 serve: GET /x?k3?serve:?GET?/admin?200? 404 1.0ms");
    EXPECT_EQ(request_log_line(RequestLogFormat::json, {"GET", "/x\ny", 404, std::nullopt, 1}).find('\n'),
              std::string::npos);
}

TEST(RequestLog, OffWritesNothing) {
    EXPECT_EQ(request_log_line(RequestLogFormat::off, {"GET", "/health", 200, std::nullopt, 1}), "");
}

}  // namespace
}  // namespace k3::server
