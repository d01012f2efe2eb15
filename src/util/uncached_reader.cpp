#include "util/uncached_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/error.h"

namespace k3::util {

UncachedReader::UncachedReader(std::string path) : path_(std::move(path)) {
    buffered_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (buffered_fd_ < 0) throw Error(path_ + ": cannot open: " + std::strerror(errno));
    direct_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
}

UncachedReader::~UncachedReader() {
    if (direct_fd_ >= 0) ::close(direct_fd_);
    ::close(buffered_fd_);
}

uint64_t UncachedReader::span_bytes(uint64_t offset, uint64_t length) {
    const uint64_t first = offset / kAlignment * kAlignment;
    const uint64_t end = (offset + length + kAlignment - 1) / kAlignment * kAlignment;
    return end - first;
}

const uint8_t* UncachedReader::read(uint64_t offset, uint64_t length, uint8_t* buffer) const {
    const uint64_t first = offset / kAlignment * kAlignment;
    const uint64_t wanted_end = offset + length - first;  // bytes of the span that must arrive
    const uint64_t span = span_bytes(offset, length);
    const bool use_direct = direct();
    const int fd = use_direct ? direct_fd_ : buffered_fd_;
    uint64_t done = 0;
    while (done < wanted_end) {
        const ssize_t got = ::pread(fd, buffer + done, span - done, off_t(first + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == EINVAL && use_direct) {  // this file system takes no O_DIRECT
            direct_refused_ = true;
            return read(offset, length, buffer);
        }
        if (got <= 0)
            throw Error(path_ + ": cannot read " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                        (got < 0 ? std::string(": ") + std::strerror(errno) : std::string(": unexpected end of file")));
        done += uint64_t(got);
        if (use_direct && done % kAlignment != 0) break;  // O_DIRECT stops short only at the end of the file
    }
    if (done < wanted_end)
        throw Error(path_ + ": cannot read " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                    ": unexpected end of file");
    if (!use_direct) ::posix_fadvise(fd, off_t(first), off_t(span), POSIX_FADV_DONTNEED);
    return buffer + (offset - first);
}

void UncachedReader::read_exact(uint64_t offset, uint64_t length, uint8_t* buffer) const {
    uint64_t done = 0;
    while (done < length) {
        const ssize_t got = ::pread(buffered_fd_, buffer + done, length - done, off_t(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            throw Error(path_ + ": cannot read " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                        (got < 0 ? std::string(": ") + std::strerror(errno) : std::string(": unexpected end of file")));
        done += uint64_t(got);
    }
    ::posix_fadvise(buffered_fd_, off_t(offset), off_t(length), POSIX_FADV_DONTNEED);
}

void UncachedReader::drop_cached_pages() const { ::posix_fadvise(buffered_fd_, 0, 0, POSIX_FADV_DONTNEED); }

}  // namespace k3::util
