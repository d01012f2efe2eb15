// One line per answered request on stderr (`k3 serve --log-format text|json|off`): method, path,
// status, tokens and time. Never the query string, a body, a prompt or a header, so neither
// prompts nor API keys reach the log.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace k3::server {

enum class RequestLogFormat { text, json, off };

// Token counts of a generation request (absent for other requests).
struct RequestTokens {
    int64_t prompt = 0;
    int64_t completion = 0;
};

struct RequestLogEntry {
    std::string method, path;  // path without the query string
    int status = 0;
    std::optional<RequestTokens> tokens;
    double ms = 0.0;  // from the request head to the end of the answer
};

// The line without its newline; empty for RequestLogFormat::off.
std::string request_log_line(RequestLogFormat format, const RequestLogEntry& entry);

// Writes the line and a newline in one call, so concurrent writers do not interleave.
void write_request_log(RequestLogFormat format, const RequestLogEntry& entry, std::FILE* out = stderr);

}  // namespace k3::server
