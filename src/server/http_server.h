// The network side of `k3 serve`: HTTP/1.1 on Boost.Beast with bounded parsers (header and body
// limits, chunked bodies included), per-connection timeouts, a connection cap, keep-alive, and
// chunked streaming of responses produced on another thread. All I/O runs on one thread.
// Requests with a body (parsing, template rendering, tokenization) are handled on a small
// worker pool with a bounded queue, so that no request stalls the I/O thread; requests without
// one (GET /health, /metrics, /v1/models) are handled on the I/O thread and must be cheap.
// Generation runs on the scheduler's thread and answers through a ResponseChannel.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http_types.h"
#include "server/request_log.h"

namespace k3::server {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;                     // 0: any free port (see HttpServer::port())
    uint64_t max_body_bytes = 8u << 20;       // request bodies, chunked or not
    uint32_t max_header_bytes = 16u << 10;    // the request line and headers together
    size_t max_connections = 512;             // beyond it new connections are answered 503
    int request_timeout_s = 30;               // to receive a whole request, or one write to finish
    int idle_timeout_s = 60;                  // a kept-alive connection waiting for its next request
    int shutdown_grace_s = 10;                // after a stop, then connections are cut
    size_t workers = 2;                       // threads that run handlers of requests with a body
    size_t work_queue = 64;                   // such requests waiting for one; beyond it 503
    std::vector<std::string> cors_origins;    // origins browsers may call from ("*": any); none: no CORS
    RequestLogFormat log_format = RequestLogFormat::text;  // one line per request on stderr
};

// What a handler answers: a whole response now, or a channel that will carry it.
struct Reply {
    HttpResponse response;
    std::shared_ptr<ResponseChannel> channel;  // when set, `response` is unused
};
using Handler = std::function<Reply(const HttpRequest&)>;  // called from several threads at once

class HttpServer {
public:
    // Binds and listens; throws k3::Error if the address cannot be bound.
    HttpServer(const HttpServerOptions& options, Handler handler);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    uint16_t port() const;  // the bound port

    // Serves on the calling thread until stop() or SIGINT/SIGTERM (when handle_signals).
    // `on_stopping` runs on the I/O thread once new connections are refused, so the owner can
    // cancel in-flight work; run() then waits for open responses to end (at most the grace
    // period) and returns.
    void run(bool handle_signals, std::function<void()> on_stopping);
    void stop();  // from any thread

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// {"error": {"message", "type", "code"}} as OpenAI shapes it.
std::string error_json(const std::string& message, const std::string& type, const std::string& code);
HttpResponse error_response(int status, const std::string& message, const std::string& type,
                            const std::string& code);

}  // namespace k3::server
