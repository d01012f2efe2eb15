// A `k3 serve` child process on a loopback port chosen by the kernel, and a minimal HTTP/1.1
// client (one request per connection, chunked bodies decoded) to talk to it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace k3::testing {

class ServerProcess {
public:
    // Runs `k3 serve -m MODEL --port 0 -t THREADS ARGS...` and waits for its "listening on" line.
    // `stderr_path`: a file its stderr goes to (empty: this process's stderr). `launcher`: a
    // program and its arguments that start k3 (mpirun for a parallel job); empty: k3 itself.
    ServerProcess(const std::string& model, const std::vector<std::string>& args, const std::string& stderr_path = {},
                  const std::vector<std::string>& launcher = {}, int threads = 2);
    ~ServerProcess();  // stops it if still running
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;

    uint16_t port() const { return port_; }
    pid_t pid() const { return pid_; }
    // Sends SIGTERM and returns the exit status (-1 if it died by a signal or could not be reaped).
    int stop();
    // Waits for a server already told to stop (a second SIGTERM would find it mid-shutdown) and
    // returns its exit status as stop() does.
    int wait_for_exit();

private:
    pid_t pid_ = -1;
    int stdout_fd_ = -1;
    uint16_t port_ = 0;
};

struct HttpReply {
    int status = 0;
    std::string headers;  // raw header block, lower-cased names
    std::string body;     // de-chunked
    std::string header(const std::string& name) const;  // value of a header (lower-case name), or ""
};

// A socket connected to 127.0.0.1:port; throws if the connection fails.
int connect_loopback(uint16_t port);

// Resident memory of a process in bytes (VmRSS), or 0 if it cannot be read.
uint64_t resident_bytes(pid_t pid);

// Sends one request (Connection: close) and reads the whole reply. `extra_headers` are full lines
// without CRLF, e.g. "Authorization: Bearer x".
HttpReply http_request(uint16_t port, const std::string& method, const std::string& path,
                       const std::string& body = {}, const std::vector<std::string>& extra_headers = {});

// Reads a whole reply from `fd` until the server closes it, then closes `fd`.
HttpReply read_reply(int fd);

// The `data:` payloads of a server-sent-event body, in order.
std::vector<std::string> sse_events(const std::string& body);

// Why a node test (tests/node) cannot run here: node or one of `packages` (tests/node/node_modules,
// from scripts/install-test-deps.sh) is missing; empty when it can.
std::string node_test_unavailable(const std::vector<std::string>& packages);

// Runs `node tests/node/SCRIPT K3_BINARY ARGS...`; returns its exit status and its stdout and
// stderr together (in `out`).
struct NodeTestResult {
    int status = -1;
    std::string out;
};
NodeTestResult run_node_test(const std::string& script, const std::vector<std::string>& args);

}  // namespace k3::testing
