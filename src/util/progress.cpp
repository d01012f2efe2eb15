#include "util/progress.h"

#include <unistd.h>

#include <string>

#include "util/byte_size.h"

namespace k3::util {
namespace {

std::string clock_text(double seconds) {
    const long s = long(seconds + 0.5);
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    return buffer;
}

}  // namespace

Progress::Progress(std::FILE* out, uint64_t total_bytes, size_t total_items)
    : out_(out), terminal_(out && isatty(fileno(out))), total_bytes_(total_bytes), total_items_(total_items),
      start_(std::chrono::steady_clock::now()), last_print_(start_) {}

void Progress::advance(uint64_t bytes, std::string_view item, size_t items) {
    done_bytes_ += bytes;
    done_items_ += items;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print_ >= (terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000))) {
        last_print_ = now;
        print(item);
    }
}

void Progress::finish() {
    if (!out_) return;
    print("done");
    if (terminal_) std::fputc('\n', out_);
}

void Progress::print(std::string_view item) {
    if (!out_) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = elapsed > 0 ? double(done_bytes_) / elapsed : 0;  // bytes/s
    const double eta = rate > 0 ? double(total_bytes_ - done_bytes_) / rate : 0;
    const double percent = total_bytes_ ? 100.0 * double(done_bytes_) / double(total_bytes_) : 100.0;
    std::fprintf(out_, "%s[%zu/%zu] %5.1f%%  %s of %s  %s/s  ETA %s  %.*s%s", terminal_ ? "\r\x1b[K" : "", done_items_,
                 total_items_, percent, format_byte_size(done_bytes_).c_str(), format_byte_size(total_bytes_).c_str(),
                 format_byte_size(uint64_t(rate)).c_str(), clock_text(eta).c_str(), int(item.size()), item.data(),
                 terminal_ ? "" : "\n");
    std::fflush(out_);
}

}  // namespace k3::util
