#include "server/server_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace k3::testing {

ServerProcess::ServerProcess(const std::string& model, const std::vector<std::string>& args,
                             const std::string& stderr_path, const std::vector<std::string>& launcher, int threads) {
    std::vector<std::string> argv_strings = launcher;
    argv_strings.insert(argv_strings.end(), {K3_BINARY, "serve", "-m", model, "--port", "0", "-t", std::to_string(threads)});
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    if (!stderr_path.empty())
        posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, argv.front(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    stdout_fd_ = out[0];
    if (rc != 0) throw std::runtime_error("cannot start " + argv_strings.front());
    // "k3 serve: listening on http://127.0.0.1:PORT (...)"
    std::string line;
    char c;
    while (read(stdout_fd_, &c, 1) == 1 && c != '\n') line += c;
    const std::string marker = "listening on http://127.0.0.1:";
    const size_t at = line.find(marker);
    if (at == std::string::npos) {
        stop();
        throw std::runtime_error("k3 serve did not start (stdout: '" + line + "')");
    }
    port_ = uint16_t(std::stoi(line.substr(at + marker.size())));
}

ServerProcess::~ServerProcess() {
    if (pid_ > 0) stop();
}

int ServerProcess::stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    return wait_for_exit();
}

int ServerProcess::wait_for_exit() {
    if (pid_ <= 0) return -1;
    int status = 0;
    const pid_t reaped = waitpid(pid_, &status, 0);
    pid_ = -1;
    if (stdout_fd_ >= 0) close(stdout_fd_);
    stdout_fd_ = -1;
    return reaped > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string HttpReply::header(const std::string& name) const {
    const std::string key = "\n" + name + ":";
    const size_t at = headers.find(key);
    if (at == std::string::npos) return {};
    size_t begin = at + key.size();
    const size_t end = headers.find('\r', begin);
    while (begin < end && headers[begin] == ' ') ++begin;
    return headers.substr(begin, end - begin);
}

namespace {

std::string dechunk(const std::string& raw) {
    std::string body;
    size_t pos = 0;
    for (;;) {
        const size_t eol = raw.find("\r\n", pos);
        if (eol == std::string::npos) throw std::runtime_error("truncated chunked body");
        const size_t size = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
        if (size == 0) return body;
        body += raw.substr(eol + 2, size);
        pos = eol + 2 + size + 2;
    }
}

}  // namespace

int connect_loopback(uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        close(fd);
        throw std::runtime_error("cannot connect to port " + std::to_string(port));
    }
    return fd;
}

uint64_t resident_bytes(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmRSS:   1234 kB"
    return 0;
}

HttpReply http_request(uint16_t port, const std::string& method, const std::string& path, const std::string& body,
                       const std::vector<std::string>& extra_headers) {
    const int fd = connect_loopback(port);
    std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    for (const std::string& line : extra_headers) request += line + "\r\n";
    if (!body.empty() || method == "POST")
        request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    request += "\r\n" + body;
    for (size_t sent = 0; sent < request.size();) {
        const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;  // the server may answer (e.g. 413) and close before reading it all
        sent += size_t(n);
    }
    return read_reply(fd);
}

HttpReply read_reply(int fd) {
    std::string raw;
    char buffer[65536];
    for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) raw.append(buffer, size_t(n));
    close(fd);
    HttpReply reply;
    const size_t head_end = raw.find("\r\n\r\n");
    if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || head_end == std::string::npos)
        throw std::runtime_error("not an HTTP reply: '" + raw.substr(0, 80) + "'");
    reply.status = std::stoi(raw.substr(9, 3));
    reply.headers = raw.substr(0, head_end + 2);
    std::transform(reply.headers.begin(), reply.headers.end(), reply.headers.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    const std::string rest = raw.substr(head_end + 4);
    reply.body = reply.header("transfer-encoding") == "chunked" ? dechunk(rest) : rest;
    return reply;
}

std::vector<std::string> sse_events(const std::string& body) {
    std::vector<std::string> events;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
        const size_t end = body.find("\n\n", pos);
        events.push_back(body.substr(pos + 6, end - pos - 6));
        pos = end;
    }
    return events;
}

std::string node_test_unavailable(const std::vector<std::string>& packages) {
    if (std::system("node --version > /dev/null 2>&1") != 0)
        return "node is not installed (scripts/install-deps.sh installs nodejs)";
    const std::string modules = std::string(K3_SOURCE_DIR) + "/tests/node/node_modules/";
    for (const std::string& package : packages)
        if (!std::filesystem::exists(modules + package + "/package.json"))
            return "npm package " + package + " missing: run scripts/install-test-deps.sh";
    return {};
}

NodeTestResult run_node_test(const std::string& script, const std::vector<std::string>& args) {
    std::string command = "node '" + std::string(K3_SOURCE_DIR) + "/tests/node/" + script + "' '" + K3_BINARY + "'";
    for (const std::string& arg : args) command += " '" + arg + "'";
    command += " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run " + command);
    NodeTestResult result;
    char buffer[4096];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) result.out.append(buffer, n);
    result.status = pclose(pipe);
    return result;
}

}  // namespace k3::testing
