#include "util/anonymous_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "util/byte_size.h"
#include "util/error.h"

namespace k3::util {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

}  // namespace

AnonymousMemory::AnonymousMemory(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw Error("cannot allocate " + format_byte_size(bytes) + ": " + std::strerror(errno));
    data_ = static_cast<uint8_t*>(p);
    // Transparent huge pages where the system leaves them to madvise: a weight copy is written with
    // a 512th of the page faults and read with fewer TLB misses. Advice only: memory without it
    // works the same.
    if (bytes >= kHugePage) ::madvise(p, bytes, MADV_HUGEPAGE);
}

AnonymousMemory::~AnonymousMemory() { release(); }

AnonymousMemory::AnonymousMemory(AnonymousMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AnonymousMemory& AnonymousMemory::operator=(AnonymousMemory&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void AnonymousMemory::release() {
    if (data_) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace k3::util
