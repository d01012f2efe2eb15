#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/error.h"

namespace k3::util {

MappedFile::MappedFile(std::string path) : path_(std::move(path)) {
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path_ + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int err = errno;
        ::close(fd);
        throw Error(path_ + ": not a regular file" + (err ? std::string(": ") + std::strerror(err) : ""));
    }
    size_ = size_t(st.st_size);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            throw Error(path_ + ": cannot mmap " + std::to_string(size_) + " bytes: " + std::strerror(err));
        }
        data_ = static_cast<const uint8_t*>(p);
        // Lets the kernel read the file ahead in 2 MiB folios and map them whole (FilePmdMapped),
        // so decode's scattered reads of the weights miss the TLB less. Advice only.
        ::madvise(p, size_, MADV_HUGEPAGE);
    }
    ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() { unmap(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        unmap();
        path_ = std::move(other.path_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

namespace {

// The whole pages [first, end) that hold [data, data + n_bytes).
struct PageSpan {
    uintptr_t first, end;
};
PageSpan pages_of(const uint8_t* data, size_t n_bytes) {
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    return {uintptr_t(data) / page * page, (uintptr_t(data) + n_bytes + page - 1) / page * page};
}

}  // namespace

void release_mapped_pages(const uint8_t* data, size_t n_bytes) {
    if (n_bytes == 0) return;
    const PageSpan span = pages_of(data, n_bytes);
    // Advice only: the bytes stay readable whatever it does, so a failure changes nothing.
    ::madvise(reinterpret_cast<void*>(span.first), span.end - span.first, MADV_DONTNEED);
}

void populate_mapped_pages(const uint8_t* data, size_t n_bytes) {
    if (n_bytes == 0) return;
    const PageSpan span = pages_of(data, n_bytes);
    if (::madvise(reinterpret_cast<void*>(span.first), span.end - span.first, MADV_POPULATE_READ) == 0) return;
    if (errno != EINVAL) throw Error("cannot read the mapped file into memory: " + std::string(std::strerror(errno)));
    // A kernel before 5.14 lacks MADV_POPULATE_READ: a read of every page faults it in.
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    for (uintptr_t at = span.first; at < span.end; at += page) (void)*reinterpret_cast<const volatile uint8_t*>(at);
}

void MappedFile::unmap() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace k3::util
