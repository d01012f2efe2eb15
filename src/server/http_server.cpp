#include <utility>  // before Boost: 1.74's asio/awaitable.hpp uses std::exchange without including it

#include "server/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "server/cors_policy.h"
#include "util/error.h"

// GCC 12 with sanitizers reports Asio's coroutine-frame operator new/delete pair (its recycling
// allocator) as mismatched once inlined into our coroutines: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace k3::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Headers = std::vector<std::pair<std::string, std::string>>;

std::string error_json(const std::string& message, const std::string& type, const std::string& code) {
    nlohmann::ordered_json body = {{"error", {{"message", message}, {"type", type}, {"code", code}}}};
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpResponse error_response(int status, const std::string& message, const std::string& type,
                            const std::string& code) {
    return HttpResponse{status, "application/json", error_json(message, type, code), {}};
}

namespace {

constexpr auto kAwait = asio::use_awaitable;

struct Connection {
    explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
    beast::tcp_stream stream;
    bool idle = true;  // waiting for a request: safe to cut when stopping
};

// Wakes a coroutine waiting for a ResponseChannel; notified from the producer's thread.
struct Waker {
    explicit Waker(asio::io_context& io) : timer(io) {}
    asio::steady_timer timer;
};

// The client's connection failing while we wait for the generation. An orderly end of its
// sending side is not a hang-up: a client may half-close after its request (legal HTTP) and
// still read the answer; one that closed entirely is found by the next write failing.
// Pipelined bytes are left for the next request.
void watch_disconnect(const std::shared_ptr<Connection>& conn, const std::shared_ptr<ResponseChannel>& channel) {
    tcp::socket& socket = conn->stream.socket();
    socket.async_wait(tcp::socket::wait_read, [conn, channel](const error_code& ec) {
        if (ec == asio::error::operation_aborted) return;
        if (ec) {
            channel->client_gone();
            return;
        }
        char byte = 0;
        const ssize_t n = ::recv(conn->stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) channel->client_gone();
    });
}

// `added`: the CORS headers for the request's origin.
template <class Body>
void apply_head(http::response<Body>& res, const HttpResponse& head, bool keep_alive, const Headers& added) {
    res.set(http::field::server, "k3");
    res.set(http::field::content_type, head.content_type);
    for (const auto& [name, value] : head.headers) res.set(name, value);
    for (const auto& [name, value] : added) res.set(name, value);
    res.keep_alive(keep_alive);
}

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

struct HttpServer::Impl {
    HttpServerOptions options;
    CorsPolicy cors;
    Handler handler;
    asio::io_context io{1};
    tcp::acceptor acceptor{io};
    std::set<std::shared_ptr<Connection>> connections;
    bool stopping = false;
    std::function<void()> on_stopping;
    asio::steady_timer grace_timer{io};
    std::optional<asio::signal_set> signals;
    // After io: destroyed (joined) first, as its threads post their results to io.
    std::optional<asio::thread_pool> workers;
    size_t in_workers = 0;  // requests running or queued there (I/O thread only)

    std::chrono::seconds request_timeout() const { return std::chrono::seconds(options.request_timeout_s); }

    asio::awaitable<void> accept_loop();
    asio::awaitable<void> serve_connection(std::shared_ptr<Connection> conn);
    asio::awaitable<void> refuse_connection(std::shared_ptr<Connection> conn);
    asio::awaitable<void> drain(Connection& conn);
    Reply call_handler(const HttpRequest& request);
    asio::awaitable<Reply> handle(HttpRequest request);
    asio::awaitable<error_code> read_head(Connection& conn, beast::flat_buffer& buffer,
                                          http::request_parser<http::string_body>& parser);
    asio::awaitable<bool> write_response(Connection& conn, const HttpResponse& response, bool keep_alive,
                                         const Headers& added = {});
    // Returns whether it was sent whole, and the status sent.
    asio::awaitable<std::pair<bool, int>> write_channel(std::shared_ptr<Connection> conn,
                                                        std::shared_ptr<ResponseChannel> channel, bool keep_alive,
                                                        const Headers& added);
    void begin_stop();
    void forget(const std::shared_ptr<Connection>& conn);
};

asio::awaitable<void> HttpServer::Impl::accept_loop() {
    for (;;) {
        error_code ec;
        tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(kAwait, ec));
        if (stopping) co_return;
        if (ec) {
            // Out of descriptors and the like: back off instead of spinning.
            asio::steady_timer pause(io, std::chrono::milliseconds(100));
            co_await pause.async_wait(asio::redirect_error(kAwait, ec));
            continue;
        }
        auto conn = std::make_shared<Connection>(std::move(socket));
        const bool over_capacity = connections.size() >= options.max_connections;
        connections.insert(conn);
        if (over_capacity)
            asio::co_spawn(io, refuse_connection(conn), asio::detached);
        else
            asio::co_spawn(io, serve_connection(conn), asio::detached);
    }
}

asio::awaitable<void> HttpServer::Impl::refuse_connection(std::shared_ptr<Connection> conn) {
    // The head first (within the request timeout), for its Origin: a browser shows its page the
    // refusal only with the CORS headers.
    beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    parser.header_limit(options.max_header_bytes);
    const error_code ec = co_await read_head(*conn, buffer, parser);
    const std::string origin = ec ? std::string() : std::string(parser.get()[http::field::origin]);
    HttpResponse busy = error_response(503, "too many open connections", "server_error", "server_busy");
    busy.headers.emplace_back("Retry-After", "1");
    co_await write_response(*conn, busy, false, cors.response_headers(origin));
    co_await drain(*conn);
    forget(conn);
}

asio::awaitable<bool> HttpServer::Impl::write_response(Connection& conn, const HttpResponse& response,
                                                       bool keep_alive, const Headers& added) {
    http::response<http::string_body> res{http::status(response.status), 11};
    apply_head(res, response, keep_alive, added);
    res.body() = response.body;
    res.prepare_payload();
    conn.stream.expires_after(request_timeout());
    error_code ec;
    co_await http::async_write(conn.stream, res, asio::redirect_error(kAwait, ec));
    co_return !ec;
}

// Sends what a producer thread puts in `channel`: one whole response, or a chunked stream.
asio::awaitable<std::pair<bool, int>> HttpServer::Impl::write_channel(std::shared_ptr<Connection> conn,
                                                                      std::shared_ptr<ResponseChannel> channel,
                                                                      bool keep_alive, const Headers& added) {
    auto waker = std::make_shared<Waker>(io);
    channel->set_notifier([weak = std::weak_ptr<Waker>(waker), executor = io.get_executor()] {
        asio::post(executor, [weak] {
            if (auto w = weak.lock()) w->timer.cancel();
        });
    });
    watch_disconnect(conn, channel);
    http::response<http::empty_body> head;
    std::optional<http::response_serializer<http::empty_body>> serializer;
    bool ok = true;
    int status = 0;
    for (;;) {
        ResponseChannel::Taken taken = channel->take();
        error_code ec;
        if (taken.has_head) status = taken.head.status;
        if (taken.has_head && !taken.streamed) {
            ok = co_await write_response(*conn, taken.head, keep_alive, added);
            break;
        }
        if (taken.has_head) {
            head = http::response<http::empty_body>{http::status(taken.head.status), 11};
            apply_head(head, taken.head, keep_alive, added);
            head.chunked(true);
            serializer.emplace(head);
            conn->stream.expires_after(request_timeout());
            co_await http::async_write_header(conn->stream, *serializer, asio::redirect_error(kAwait, ec));
        }
        if (!ec && !taken.bytes.empty() && serializer) {
            conn->stream.expires_after(request_timeout());
            co_await asio::async_write(conn->stream, http::make_chunk(asio::buffer(taken.bytes)),
                                       asio::redirect_error(kAwait, ec));
        }
        if (!ec && taken.finished) {
            conn->stream.expires_after(request_timeout());
            co_await asio::async_write(conn->stream, http::make_chunk_last(), asio::redirect_error(kAwait, ec));
            break;
        }
        if (ec) {
            ok = false;
            break;
        }
        if (!taken.has_head && taken.bytes.empty()) {
            conn->stream.expires_never();  // a generation may take long; the watcher sees hang-ups
            waker->timer.expires_at(asio::steady_timer::time_point::max());
            co_await waker->timer.async_wait(asio::redirect_error(kAwait, ec));
        }
    }
    if (!ok) channel->client_gone();
    channel->set_notifier({});
    error_code ignored;
    conn->stream.socket().cancel(ignored);  // ends the disconnect watcher
    co_return std::pair{ok, status};
}

Reply HttpServer::Impl::call_handler(const HttpRequest& request) {
    try {
        return handler(request);
    } catch (const std::exception& e) {
        return {error_response(500, e.what(), "server_error", "internal_error"), nullptr};
    }
}

// A request with a body goes to the worker pool while this coroutine waits; the I/O thread
// serves other connections meanwhile.
asio::awaitable<Reply> HttpServer::Impl::handle(HttpRequest request) {
    if (request.body.empty()) co_return call_handler(request);
    if (in_workers >= options.workers + options.work_queue) {
        HttpResponse busy = error_response(503, "the server is busy (request queue full); retry later",
                                           "server_error", "server_busy");
        busy.headers.emplace_back("Retry-After", "1");
        co_return Reply{busy, nullptr};
    }
    struct Pending {
        explicit Pending(asio::io_context& io) : timer(io, asio::steady_timer::time_point::max()) {}
        asio::steady_timer timer;  // cancelled when the reply is in
        Reply reply;
        bool done = false;  // set on the I/O thread
    };
    auto pending = std::make_shared<Pending>(io);
    ++in_workers;
    asio::post(*workers, [this, pending, request = std::move(request)] {
        Reply reply = call_handler(request);
        asio::post(io, [this, pending, reply = std::move(reply)]() mutable {
            --in_workers;
            pending->reply = std::move(reply);
            pending->done = true;
            pending->timer.cancel();
        });
    });
    while (!pending->done) {
        error_code ec;
        co_await pending->timer.async_wait(asio::redirect_error(kAwait, ec));
    }
    co_return std::move(pending->reply);
}

// After refusing a request whose body is still arriving: closing at once would reset the
// connection and could destroy the refusal before the client reads it, so read and discard
// for a moment first.
asio::awaitable<void> HttpServer::Impl::drain(Connection& conn) {
    error_code ec;
    conn.stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    conn.stream.expires_after(std::chrono::seconds(1));
    std::vector<char> scratch(64 << 10);
    uint64_t discarded = 0;
    while (!ec && discarded <= options.max_body_bytes) {
        discarded += co_await conn.stream.async_read_some(asio::buffer(scratch), asio::redirect_error(kAwait, ec));
    }
}

// Reads a request head into `parser`. Beast's own header_limit forgets the fields it has already
// consumed (a flood of empty "a:" lines passes it), so every byte of the head is counted here.
// A kept-alive connection may wait --idle-timeout for the first byte; from there the whole
// request must arrive within --timeout.
asio::awaitable<error_code> HttpServer::Impl::read_head(Connection& conn, beast::flat_buffer& buffer,
                                                        http::request_parser<http::string_body>& parser) {
    conn.stream.expires_after(std::chrono::seconds(options.idle_timeout_s));
    bool started = false;
    uint64_t head_bytes = 0;
    for (;;) {
        if (buffer.size() > 0) {
            if (!started) conn.stream.expires_after(request_timeout());
            started = true;
            error_code ec;
            const size_t used = parser.put(buffer.data(), ec);
            buffer.consume(used);
            head_bytes += used;
            if (parser.is_header_done()) co_return error_code{};
            if (ec && ec != http::error::need_more) co_return ec;
            if (head_bytes + buffer.size() > options.max_header_bytes) co_return http::error::header_limit;
        }
        const size_t room = options.max_header_bytes + 1 - (head_bytes + buffer.size());
        error_code ec;
        const size_t n = co_await conn.stream.async_read_some(buffer.prepare(room), asio::redirect_error(kAwait, ec));
        buffer.commit(n);
        if (ec == asio::error::eof)
            co_return parser.got_some() || buffer.size() > 0 ? http::error::partial_message : http::error::end_of_stream;
        if (ec) co_return ec;
    }
}

asio::awaitable<void> HttpServer::Impl::serve_connection(std::shared_ptr<Connection> conn) {
    beast::flat_buffer buffer;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.header_limit(options.max_header_bytes);
        parser.body_limit(options.max_body_bytes);
        conn->idle = true;
        error_code ec = co_await read_head(*conn, buffer, parser);
        conn->idle = false;
        const auto started = std::chrono::steady_clock::now();
        // Known once the head is in (an oversized head leaves them empty).
        const std::string origin(parser.get()[http::field::origin]);
        const std::string method(parser.get().method_string());
        const std::string target(parser.get().target());
        const std::string path = target.substr(0, target.find('?'));
        const Headers cors_headers = cors.response_headers(origin);
        auto log = [&](int status, std::optional<RequestTokens> tokens) {
            write_request_log(options.log_format, {method, path, status, tokens, ms_since(started)});
        };
        if (!ec && !stopping) {
            if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {  // curl, for larger bodies
                http::response<http::empty_body> go_on{http::status::continue_, 11};
                co_await http::async_write(conn->stream, go_on, asio::redirect_error(kAwait, ec));
            }
            if (!ec) co_await http::async_read(conn->stream, buffer, parser, asio::redirect_error(kAwait, ec));
        }
        if (stopping && !ec) ec = asio::error::operation_aborted;
        if (ec) {
            // A malformed or oversized request is answered before closing; a vanished peer is not.
            std::optional<HttpResponse> refusal;
            if (ec == http::error::body_limit)
                refusal = error_response(413, "request body exceeds " + std::to_string(options.max_body_bytes) +
                                                  " bytes", "invalid_request_error", "body_too_large");
            else if (ec == http::error::header_limit)
                refusal = error_response(431, "request headers exceed " + std::to_string(options.max_header_bytes) +
                                                  " bytes", "invalid_request_error", "headers_too_large");
            else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
                     ec != http::error::end_of_stream && ec != http::error::partial_message)
                refusal = error_response(400, "malformed HTTP request: " + ec.message(), "invalid_request_error",
                                         "bad_request");
            if (refusal) {
                co_await write_response(*conn, *refusal, false, cors_headers);
                log(refusal->status, std::nullopt);
                co_await drain(*conn);
            }
            break;
        }
        const http::request<http::string_body>& message = parser.get();
        const bool keep_alive = message.keep_alive();
        // A browser's preflight carries no credentials: answered here, before any key check.
        if (cors.enabled() && message.method() == http::verb::options && !origin.empty()) {
            HttpResponse preflight{204, "text/plain", "", {}};
            const bool ok = co_await write_response(
                *conn, preflight, keep_alive && !stopping,
                cors.preflight_headers(origin, std::string(message[http::field::access_control_request_headers])));
            log(preflight.status, std::nullopt);
            if (!ok || !keep_alive || stopping) break;
            continue;
        }
        HttpRequest request;
        request.method = method;
        request.path = path;
        if (const size_t mark = target.find('?'); mark != std::string::npos) request.query = target.substr(mark + 1);
        request.authorization = std::string(message[http::field::authorization]);
        request.api_key = std::string(message["x-api-key"]);
        request.origin = origin;
        request.body = message.body();

        const Reply reply = co_await handle(std::move(request));
        bool ok = true;
        if (reply.channel) {
            int status = 0;
            std::tie(ok, status) = co_await write_channel(conn, reply.channel, keep_alive && !stopping, cors_headers);
            log(status, reply.channel->tokens());
        } else {
            ok = co_await write_response(*conn, reply.response, keep_alive && !stopping, cors_headers);
            log(reply.response.status, std::nullopt);
        }
        if (!ok || !keep_alive || stopping) break;
    }
    error_code ignored;
    conn->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    conn->stream.close();
    forget(conn);
}

void HttpServer::Impl::forget(const std::shared_ptr<Connection>& conn) {
    connections.erase(conn);
    if (stopping && connections.empty()) grace_timer.cancel();
}

void HttpServer::Impl::begin_stop() {
    if (stopping) return;
    stopping = true;
    error_code ignored;
    acceptor.close(ignored);
    if (signals) signals->cancel(ignored);
    if (on_stopping) on_stopping();
    for (const auto& conn : connections)
        if (conn->idle) conn->stream.socket().close(ignored);
    if (connections.empty()) return;
    grace_timer.expires_after(std::chrono::seconds(options.shutdown_grace_s));
    grace_timer.async_wait([this](const error_code& ec) {
        if (ec) return;
        error_code ignored_close;
        for (const auto& conn : connections) conn->stream.socket().close(ignored_close);
    });
}

HttpServer::HttpServer(const HttpServerOptions& options, Handler handler) : impl_(std::make_unique<Impl>()) {
    impl_->options = options;
    impl_->cors = CorsPolicy(options.cors_origins);
    impl_->handler = std::move(handler);
    error_code ec;
    const asio::ip::address address = asio::ip::make_address(options.host, ec);
    if (ec) throw Error("--host: '" + options.host + "' is not an IP address");
    const tcp::endpoint endpoint(address, options.port);
    tcp::acceptor& acceptor = impl_->acceptor;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw Error("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " + ec.message());
}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::run(bool handle_signals, std::function<void()> on_stopping) {
    Impl& impl = *impl_;
    impl.on_stopping = std::move(on_stopping);
    if (handle_signals) {
        impl.signals.emplace(impl.io, SIGINT, SIGTERM);
        impl.signals->async_wait([&impl](const error_code& ec, int) {
            if (!ec) impl.begin_stop();
        });
    }
    impl.workers.emplace(std::max<size_t>(impl.options.workers, 1));
    asio::co_spawn(impl.io, impl.accept_loop(), asio::detached);
    impl.io.run();
    impl.workers->join();  // io ran until every request's coroutine, so every handler, had ended
}

void HttpServer::stop() {
    asio::post(impl_->io, [impl = impl_.get()] { impl->begin_stop(); });
}

}  // namespace k3::server
