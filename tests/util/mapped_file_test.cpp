// util::MappedFile's page helpers: populate_mapped_pages reads a range of the file into memory
// and nothing far from it; release_mapped_pages gives a range back.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "support/test_support.h"
#include "util/mapped_file.h"

namespace k3::testing {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// How many of the pages of [data, data + n_bytes) the page cache holds (mincore).
size_t resident_pages(const uint8_t* data, size_t n_bytes) {
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in_core(n_bytes / page);
    if (::mincore(const_cast<uint8_t*>(data), n_bytes, in_core.data()) != 0) return 0;
    size_t n = 0;
    for (unsigned char c : in_core) n += c & 1;
    return n;
}

TEST(MappedFile, PopulateReadsTheRangeInAndNothingFarFromIt) {
    const ScratchDir dir;
    const std::string path = dir.file("pages.bin");
    std::vector<uint8_t> bytes(96 * kMiB);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 2654435761u >> 24);
    write_bytes(path, bytes.data(), bytes.size());
    const int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);

    const util::MappedFile file(path);
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    if (resident_pages(file.data(), file.size()) > 0)
        GTEST_SKIP() << "this file system keeps the file's pages in memory (tmpfs?): nothing to read in";
    util::populate_mapped_pages(file.data() + 8 * kMiB + 100, 8 * kMiB - 200);
    EXPECT_EQ(resident_pages(file.data() + 8 * kMiB, 8 * kMiB), 8 * kMiB / page);
    // Far beyond what readahead adds (read_ahead_kb is 8 MiB on some disks).
    EXPECT_EQ(resident_pages(file.data() + 64 * kMiB, 32 * kMiB), 0u) << "read in far beyond the range";
    EXPECT_EQ(file.data()[12 * kMiB + 7], bytes[12 * kMiB + 7]);
}

}  // namespace
}  // namespace k3::testing
