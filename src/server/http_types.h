// The HTTP boundary between the API (plain C++) and the network layer (Boost.Beast): a parsed
// request, a whole response, and a response produced later, piece by piece, on another thread.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/request_log.h"

namespace k3::server {

struct HttpRequest {
    std::string method;         // "GET", "POST", ...
    std::string path;           // target without the query string
    std::string query;          // what follows '?' in the target, if anything
    std::string authorization;  // the Authorization header, if any
    std::string api_key;        // the x-api-key header (Anthropic's clients), if any
    std::string origin;         // the Origin header (browsers), if any
    std::string body;
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // extra headers, e.g. Retry-After
};

// A response written by a producer thread (the scheduler) and sent by the network layer.
// Either respond() once, or start_stream() then any number of send() and a final finish().
// Thread-safe.
class ResponseChannel {
public:
    // Producer side.
    void respond(HttpResponse response);            // the whole response; ends the channel
    void start_stream(const std::string& content_type);  // a 200 streamed with chunked encoding
    void send(std::string bytes);                   // a piece of a streamed body
    void finish();                                  // ends a streamed body

    // A generation's token counts, for the request log; set before the channel ends.
    void set_tokens(RequestTokens tokens);
    std::optional<RequestTokens> tokens();

    // Called when the client goes away; the producer sets it (e.g. to cancel its generation).
    void on_client_gone(std::function<void()> callback);
    // Network side: the client disconnected or the server is stopping.
    void client_gone();

    // Network side: `notify` is called (from any thread) whenever something new can be taken.
    void set_notifier(std::function<void()> notify);
    struct Taken {
        bool has_head = false;   // a head is waiting (respond() or start_stream())
        bool streamed = false;   // the head is a stream head (no Content-Length)
        HttpResponse head;       // status, content type, headers, and for respond() the body
        std::string bytes;       // streamed body bytes since the last take()
        bool finished = false;   // nothing will follow
    };
    Taken take();

private:
    void notify_locked(std::unique_lock<std::mutex>& lock);

    std::mutex mutex_;
    bool head_ready_ = false, head_taken_ = false, streamed_ = false, finished_ = false, gone_ = false;
    HttpResponse head_;
    std::string pending_;
    std::function<void()> notify_;
    std::function<void()> on_gone_;
    std::optional<RequestTokens> tokens_;
};

}  // namespace k3::server
