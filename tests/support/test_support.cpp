#include "support/test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace k3::testing {

std::string fixture(const std::string& relative) {
    return std::filesystem::weakly_canonical(std::string(K3_FIXTURES) + "/" + relative).string();
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_bytes(const std::string& path, const void* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) throw std::runtime_error("cannot write " + path);
}

ScratchDir::ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "k3-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
}

ScratchDir::~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

namespace {

// `signal` 0: none. Otherwise sent once `ready()` is true, or pending from exec without `ready`.
CommandResult run_with(const std::string& binary, const std::vector<std::string>& args, const std::string& stdin_text,
                       int signal, const std::function<bool()>& ready) {
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (pipe(in_pipe) || pipe(out_pipe) || pipe(err_pipe)) throw std::runtime_error("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
        if (signal && !ready) {
            sigset_t blocked;
            sigemptyset(&blocked);
            sigaddset(&blocked, signal);
            sigprocmask(SIG_BLOCK, &blocked, nullptr);
            kill(getpid(), signal);
        }
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
        std::vector<char*> argv;
        std::vector<std::string> copies = args;
        copies.insert(copies.begin(), binary);
        for (std::string& a : copies) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(binary.c_str(), argv.data());
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    // Feed stdin and drain both outputs together so that no pipe fills up and blocks the child.
    CommandResult result;
    size_t written = 0;
    int in_fd = in_pipe[1];
    if (stdin_text.empty()) {
        close(in_fd);
        in_fd = -1;
    } else {
        fcntl(in_fd, F_SETFL, O_NONBLOCK);
    }
    bool out_open = true, err_open = true;
    bool waiting_to_signal = signal && ready;
    while (out_open || err_open) {
        pollfd fds[3] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                         {err_open ? err_pipe[0] : -1, POLLIN, 0},
                         {in_fd, POLLOUT, 0}};
        poll(fds, 3, waiting_to_signal ? 10 : -1);
        if (waiting_to_signal && ready()) {
            kill(pid, signal);
            waiting_to_signal = false;
        }
        char buf[65536];
        if (fds[0].revents) {
            ssize_t n = read(out_pipe[0], buf, sizeof buf);
            if (n > 0) result.out.append(buf, size_t(n)); else out_open = false;
        }
        if (fds[1].revents) {
            ssize_t n = read(err_pipe[0], buf, sizeof buf);
            if (n > 0) result.err.append(buf, size_t(n)); else err_open = false;
        }
        if (in_fd >= 0 && fds[2].revents) {
            ssize_t n = write(in_fd, stdin_text.data() + written, stdin_text.size() - written);
            if (n > 0) written += size_t(n);
            if (n < 0 || written == stdin_text.size()) {
                close(in_fd);
                in_fd = -1;
            }
        }
    }
    if (in_fd >= 0) close(in_fd);
    close(out_pipe[0]);
    close(err_pipe[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    return result;
}

}  // namespace

CommandResult run_k3(const std::vector<std::string>& args, const std::string& stdin_text) {
    return run_with(K3_BINARY, args, stdin_text, 0, {});
}

CommandResult run_program(const std::string& binary, const std::vector<std::string>& args,
                          const std::string& stdin_text) {
    return run_with(binary, args, stdin_text, 0, {});
}

CommandResult run_k3_interrupted(const std::vector<std::string>& args, int signal, std::function<bool()> ready) {
    return run_with(K3_BINARY, args, {}, signal, ready);
}

}  // namespace k3::testing
