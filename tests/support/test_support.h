// Helpers shared by every test executable: fixture paths, scratch files, running `k3`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace k3::testing {

// Absolute path of a file under ../shared/fixtures (e.g. "tiny-k3/model.gguf").
std::string fixture(const std::string& relative);

// Whole file as bytes; fails the test (throws) if it cannot be read.
std::vector<uint8_t> read_bytes(const std::string& path);
std::string read_text(const std::string& path);
void write_bytes(const std::string& path, const void* data, size_t size);

// A fresh directory under the system temp dir, removed when the object dies.
class ScratchDir {
public:
    ScratchDir();
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

struct CommandResult {
    int exit_code = -1;    // -1 if killed by a signal
    int signal = 0;        // the signal that ended it, if any
    std::string out, err;  // captured stdout and stderr
};

// Runs the built k3 binary with the given arguments (no shell), optionally feeding stdin.
CommandResult run_k3(const std::vector<std::string>& args, const std::string& stdin_text = {});

// Runs any program by its path (no shell), optionally feeding stdin.
CommandResult run_program(const std::string& binary, const std::vector<std::string>& args,
                          const std::string& stdin_text = {});

// Runs k3 and sends it `signal` as soon as `ready()` (polled every 10 ms) returns true; without
// `ready` the signal is pending from the start (blocked across exec), so it arrives exactly
// when k3 unblocks it.
CommandResult run_k3_interrupted(const std::vector<std::string>& args, int signal, std::function<bool()> ready = {});

}  // namespace k3::testing
