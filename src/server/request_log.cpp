#include "server/request_log.h"

#include <nlohmann/json.hpp>

namespace k3::server {

std::string request_log_line(RequestLogFormat format, const RequestLogEntry& entry) {
    if (format == RequestLogFormat::off) return {};
    if (format == RequestLogFormat::json) {
        nlohmann::ordered_json line = {{"method", entry.method}, {"path", entry.path}, {"status", entry.status}};
        if (entry.tokens) {
            line["prompt_tokens"] = entry.tokens->prompt;
            line["completion_tokens"] = entry.tokens->completion;
        }
        line["ms"] = double(int64_t(entry.ms * 10.0 + 0.5)) / 10.0;
        return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    // The path is the client's: control bytes become '?' so a request cannot forge log lines.
    std::string path = entry.path;
    for (char& c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ') c = '?';
    char tail[96];
    if (entry.tokens)
        std::snprintf(tail, sizeof tail, " %d prompt=%lld completion=%lld %.1fms", entry.status,
                      (long long)entry.tokens->prompt, (long long)entry.tokens->completion, entry.ms);
    else
        std::snprintf(tail, sizeof tail, " %d %.1fms", entry.status, entry.ms);
    return "k3 serve: " + entry.method + " " + path + tail;
}

void write_request_log(RequestLogFormat format, const RequestLogEntry& entry, std::FILE* out) {
    std::string line = request_log_line(format, entry);
    if (line.empty()) return;
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
    std::fflush(out);
}

}  // namespace k3::server
