// `k3 serve` against hostile requests (issue #18): none of them may kill, stall or bloat the
// server, and each is answered with an error that says what is wrong.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "server/http_server.h"
#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

const std::string kModel = fixture("tiny-k3/model.gguf");

// tiny-k3 with another chat template, written to `path`.
std::string model_with_template(const std::string& path, const std::string& chat_template) {
    auto in = gguf::GgufFile::open(kModel);
    gguf::GgufWriter out(path);
    for (const auto& [key, value] : in->metadata())
        if (key != "tokenizer.chat_template") out.set(key, value);
    out.set_string("tokenizer.chat_template", chat_template);
    for (const gguf::TensorInfo& t : in->tensors()) out.add_tensor(t.name, t.type, t.ne);
    for (const gguf::TensorInfo& t : in->tensors()) out.write_tensor(t.name, t.data, t.n_bytes);
    out.finish();
    return path;
}

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

// Sends `head` then up to `flood_bytes` of `filler`, repeated, and stops sending as soon as the
// server answers; returns that answer.
HttpReply flood_head(uint16_t port, const std::string& head, const std::string& filler, size_t flood_bytes) {
    const int fd = connect_loopback(port);
    std::string chunk;
    while (chunk.size() < (64u << 10)) chunk += filler;
    send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    for (size_t sent = 0; sent < flood_bytes;) {
        pollfd watch{fd, POLLIN | POLLOUT, 0};
        if (poll(&watch, 1, 10000) <= 0 || (watch.revents & (POLLIN | POLLERR | POLLHUP))) break;
        const ssize_t n = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN) break;
        if (n > 0) sent += size_t(n);
    }
    timeval wait{20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    return read_reply(fd);
}

TEST(ServerHardening, EmptyHeaderFloodIsRefusedWith431) {
    ServerProcess server(kModel, {"--ctx-size", "256"});
    const uint64_t before = resident_bytes(server.pid());
    const HttpReply reply = flood_head(server.port(), "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n", "a:\r\n",
                                       size_t{40} << 20);
    EXPECT_EQ(reply.status, 431) << reply.body;
    EXPECT_NE(reply.body.find("request headers exceed 16384 bytes"), std::string::npos) << reply.body;
    const uint64_t after = resident_bytes(server.pid());
    EXPECT_LT(after, before + (uint64_t{64} << 20)) << "resident memory grew from " << before << " to " << after;
    EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerHardening, TheWholeHeadMustArriveWithinTheRequestTimeout) {
    ServerProcess server(kModel, {"--ctx-size", "256", "--timeout", "1", "--idle-timeout", "30"});
    const int fd = connect_loopback(server.port());
    const auto start = std::chrono::steady_clock::now();
    // One header byte every 200 ms: never idle, never complete.
    const std::string head = "GET /health HTTP/1.1\r\nX-Slow: ";
    send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    bool closed = false;
    for (int i = 0; i < 50 && !closed; ++i) {
        pollfd watch{fd, POLLIN, 0};
        if (poll(&watch, 1, 200) > 0) {
            char byte;
            closed = recv(fd, &byte, 1, 0) <= 0;
        } else {
            send(fd, "x", 1, MSG_NOSIGNAL);
        }
    }
    close(fd);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(closed) << "the connection stayed open for " << seconds << " s";
    EXPECT_LT(seconds, 5.0);
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerHardening, ATemplateOverItsBudgetGets500AndTheServerKeepsServing) {
    ScratchDir dir;
    // Each iteration builds a 100,000-item list twice: the memory budget ends it within a second.
    const std::string model = model_with_template(
        dir.file("looping.gguf"),
        "{% for i in range(100000) %}{% set x = range(100000) | list %}{% endfor %}{{ messages[0].content }}");
    ServerProcess server(model, {"--ctx-size", "256"});
    const std::string chat = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})";
    for (int round = 0; round < 2; ++round) {
        const HttpReply reply = http_request(server.port(), "POST", "/v1/chat/completions", chat);
        EXPECT_EQ(reply.status, 500) << reply.body;
        EXPECT_NE(reply.body.find("the template exceeded its memory budget of 805306368 bytes"), std::string::npos)
            << reply.body;
        EXPECT_LT(resident_bytes(server.pid()), uint64_t{1} << 30);
    }
    EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
    EXPECT_EQ(http_request(server.port(), "POST", "/completion", R"({"prompt": [1, 2, 3], "n_predict": 2})").status,
              200);
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServerHardening, HealthAnswersWithinASecondWhileLargeChatsAreRendered) {
    ServerProcess server(kModel, {"--ctx-size", "256"});
    std::string body = R"({"messages": [)";
    for (int i = 0; i < 250000; ++i) body += std::string(i ? "," : "") + R"({"role":"user","content":"x"})";
    body += "]}";
    ASSERT_LT(body.size(), size_t{8} << 20);
    std::vector<std::future<int>> chats;
    for (int i = 0; i < 3; ++i)
        chats.push_back(std::async(std::launch::async, [&] {
            return http_request(server.port(), "POST", "/v1/chat/completions", body).status;
        }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the bodies are in, rendering started
    double slowest = 0;
    int answered_while_busy = 0;
    while (chats.back().wait_for(std::chrono::milliseconds(0)) != std::future_status::ready && answered_while_busy < 20) {
        const auto start = std::chrono::steady_clock::now();
        EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
        slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        ++answered_while_busy;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (auto& chat : chats) EXPECT_EQ(chat.get(), 400) << "250,000 messages exceed a 256-token context";
    EXPECT_GT(answered_while_busy, 0);
    EXPECT_LT(slowest, 1.0) << "slowest /health, seconds";
    EXPECT_EQ(server.stop(), 0);
}

void expect_key_required(uint16_t port, const std::string& key) {
    const std::string body = R"({"prompt": [1, 2, 3], "n_predict": 2})";
    EXPECT_EQ(http_request(port, "POST", "/completion", body).status, 401);
    EXPECT_EQ(http_request(port, "POST", "/completion", body, {"Authorization: Bearer " + key}).status, 200);
}

TEST(ServerHardening, ApiKeyFromTheEnvironmentOrAFile) {
    {
        setenv("K3_API_KEY", "from-env", 1);
        ServerProcess server(kModel, {"--ctx-size", "256"});
        unsetenv("K3_API_KEY");
        expect_key_required(server.port(), "from-env");
        EXPECT_EQ(server.stop(), 0);
    }
    ScratchDir dir;
    const std::string key_file = dir.file("key");
    write_bytes(key_file, "from-file\n", 10);
    ServerProcess server(kModel, {"--ctx-size", "256", "--api-key-file", key_file});
    expect_key_required(server.port(), "from-file");
    EXPECT_EQ(server.stop(), 0);
    const CommandResult empty = run_k3({"serve", "-m", kModel, "--api-key-file", dir.file("missing")});
    EXPECT_NE(empty.exit_code, 0);
    EXPECT_NE(empty.err.find("--api-key-file"), std::string::npos) << empty.err;
}

// Sends `request` on a fresh connection and returns the socket.
int send_request(uint16_t port, const std::string& path, const std::string& body) {
    const int fd = connect_loopback(port);
    const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                                "\r\n\r\n" + body;
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    return fd;
}

TEST(ServerHardening, AClientThatHalfClosesAfterItsRequestStillGetsTheWholeStream) {
    ServerProcess server(kModel, {"--ctx-size", "256"});
    const json request = {{"prompt", {1, 2, 3}}, {"n_predict", 40}, {"ignore_eos", true}, {"temperature", 0},
                          {"stream", true}};
    const int fd = send_request(server.port(), "/completion", request.dump());
    shutdown(fd, SHUT_WR);
    const HttpReply reply = read_reply(fd);
    EXPECT_EQ(reply.status, 200);
    size_t tokens = 0;
    for (const std::string& event : sse_events(reply.body)) {
        const json chunk = json::parse(event);
        if (!chunk.value("stop", false)) ++tokens;
        else EXPECT_EQ(chunk["tokens_predicted"], 40);
    }
    EXPECT_GE(tokens, 30u) << "the stream was cut short";
    EXPECT_EQ(server.stop(), 0);
}

// The payloads of a long stream on `path` that a SIGTERM cuts after its first event; the server
// must still exit 0.
std::vector<std::string> stream_cut_by_sigterm(const std::string& path, const json& request) {
    ServerProcess server(kModel, {"--ctx-size", "4096"});
    const int fd = send_request(server.port(), path, request.dump());
    std::string seen;
    char buffer[4096];
    while (seen.find("data: ") == std::string::npos) {
        const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            ADD_FAILURE() << "no stream: " << seen;
            break;
        }
        seen.append(buffer, size_t(n));
    }
    kill(server.pid(), SIGTERM);
    for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) seen.append(buffer, size_t(n));
    close(fd);
    EXPECT_EQ(server.wait_for_exit(), 0);
    return sse_events(seen);
}

TEST(ServerHardening, SigtermMidStreamEndsWithAShutdownError) {
    const json request = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 3800},
                          {"ignore_eos", true}, {"stream", true}};
    const std::vector<std::string> events = stream_cut_by_sigterm("/v1/chat/completions", request);
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(events.back(), "[DONE]");
    const json last = json::parse(events[events.size() - 2]);
    EXPECT_EQ(last["error"]["code"], "server_shutdown") << last.dump();
    for (const std::string& event : events)
        EXPECT_EQ(event.find("\"finish_reason\":\"stop\""), std::string::npos) << "a cut stream read as a stop";
}

// The agent APIs end a cut stream with their own error event, never with their normal end.
TEST(ServerHardening, SigtermMidStreamEndsAgentStreamsWithAnErrorEvent) {
    const json messages = {{{"role", "user"}, {"content", "hi"}}};
    std::vector<std::string> events =
        stream_cut_by_sigterm("/v1/messages", {{"messages", messages}, {"max_tokens", 3800}, {"stream", true}});
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(json::parse(events.front())["type"], "message_start");
    EXPECT_EQ(json::parse(events.back()),
              json::parse(R"({"type": "error", "error": {"type": "overloaded_error",
                              "message": "generation cut short: the server is shutting down"}})"));

    events = stream_cut_by_sigterm("/v1/responses", {{"input", "hi"}, {"max_output_tokens", 3800}, {"stream", true}});
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(json::parse(events.front())["type"], "response.created");
    const json last = json::parse(events.back());
    EXPECT_EQ(last["type"], "error");
    EXPECT_EQ(last["code"], "server_shutdown");
    EXPECT_EQ(last["sequence_number"], events.size() - 1);
}

// The worker pool's bounds, in process: one worker, no queue, a handler held until released.
TEST(ServerHardening, RequestsBeyondTheWorkQueueGet503WhileBodilessOnesAreServed) {
    server::HttpServerOptions options;
    options.port = 0;
    options.workers = 1;
    options.work_queue = 0;
    std::promise<void> release;
    const std::shared_future<void> released = release.get_future().share();
    std::atomic<bool> holding{false};
    server::HttpServer http(options, [&](const server::HttpRequest& request) {
        if (request.body == "hold") {
            holding = true;
            released.wait();
        }
        return server::Reply{server::HttpResponse{200, "text/plain", "done", {}}, nullptr};
    });
    std::thread io([&] { http.run(/*handle_signals=*/false, {}); });
    auto held = std::async(std::launch::async, [&] { return http_request(http.port(), "POST", "/x", "hold"); });
    for (int i = 0; i < 500 && !holding; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(holding);
    const HttpReply refused = http_request(http.port(), "POST", "/x", "more");
    EXPECT_EQ(refused.status, 503);
    EXPECT_EQ(refused.header("retry-after"), "1");
    EXPECT_EQ(http_request(http.port(), "GET", "/health").body, "done") << "a bodiless request waits for no worker";
    release.set_value();
    EXPECT_EQ(held.get().body, "done");
    EXPECT_EQ(http_request(http.port(), "POST", "/x", "more").status, 200);
    http.stop();
    io.join();
}

// Beyond --max-connections a connection gets a 503 with the CORS headers of its Origin (a
// browser page sees the refusal, not a network error), and the open one keeps being served.
TEST(ServerHardening, AConnectionBeyondTheCapGets503WithCorsHeaders) {
    server::HttpServerOptions options;
    options.port = 0;
    options.max_connections = 1;
    options.cors_origins = {"http://app.example"};
    server::HttpServer http(options, [](const server::HttpRequest&) {
        return server::Reply{server::HttpResponse{200, "text/plain", "done", {}}, nullptr};
    });
    std::thread io([&] { http.run(/*handle_signals=*/false, {}); });
    const int held = connect_loopback(http.port());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // accepted before the next one
    const HttpReply refused = http_request(http.port(), "GET", "/health", {}, {"Origin: http://app.example"});
    EXPECT_EQ(refused.status, 503);
    EXPECT_EQ(refused.header("retry-after"), "1");
    EXPECT_EQ(refused.header("access-control-allow-origin"), "http://app.example") << refused.headers;
    const std::string request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    send(held, request.data(), request.size(), MSG_NOSIGNAL);
    EXPECT_EQ(read_reply(held).body, "done");
    http.stop();
    io.join();
}

}  // namespace
}  // namespace k3::testing
