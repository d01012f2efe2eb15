// Reads byte ranges of a file without leaving them in the page cache, so that the caller, not
// the kernel, decides what stays in memory (under cgroup v1 the page cache counts against the
// limit). O_DIRECT of the 4 KiB-aligned enclosing range; where the file system refuses O_DIRECT
// (tmpfs, some network file systems), a plain pread followed by posix_fadvise(DONTNEED).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace k3::util {

class UncachedReader {
public:
    static constexpr uint64_t kAlignment = 4096;

    // Throws k3::Error naming the file if it cannot be opened.
    explicit UncachedReader(std::string path);
    ~UncachedReader();
    UncachedReader(const UncachedReader&) = delete;
    UncachedReader& operator=(const UncachedReader&) = delete;

    // Bytes of buffer that read() needs for [offset, offset + length): the aligned enclosing range.
    static uint64_t span_bytes(uint64_t offset, uint64_t length);

    // Reads [offset, offset + length) into `buffer` (kAlignment-aligned, span_bytes() long) and
    // returns where the first requested byte landed inside it. Thread-safe. Throws k3::Error
    // naming the file and offset on a failed or short read.
    const uint8_t* read(uint64_t offset, uint64_t length, uint8_t* buffer) const;

    // Reads [offset, offset + length) into any `buffer` through the page cache, then drops those
    // pages from it (for data read once, where O_DIRECT's alignment would waste memory).
    void read_exact(uint64_t offset, uint64_t length, uint8_t* buffer) const;

    // Drops the file's clean pages from the page cache (after reading through a memory map).
    void drop_cached_pages() const;

    const std::string& path() const { return path_; }
    bool direct() const { return direct_fd_ >= 0 && !direct_refused_.load(); }

private:
    std::string path_;
    int buffered_fd_ = -1;
    int direct_fd_ = -1;                          // -1 when O_DIRECT could not be opened
    mutable std::atomic<bool> direct_refused_{false};  // a read answered EINVAL
};

}  // namespace k3::util
