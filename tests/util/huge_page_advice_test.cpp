// Weights live in huge pages where the kernel allows them: MappedFile and AnonymousMemory of at
// least 2 MiB carry MADV_HUGEPAGE ("hg" among the mapping's VmFlags in /proc/self/smaps).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "util/anonymous_memory.h"
#include "util/mapped_file.h"

namespace k3::testing {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// The VmFlags of the mapping that holds `address`, or "" when none does.
std::string vm_flags_at(const void* address) {
    std::ifstream smaps("/proc/self/smaps");
    const unsigned long at = uintptr_t(address);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long first = 0, end = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &first, &end) == 2) {  // a mapping's first line
            inside = first <= at && at < end;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line.substr(8) + " ";
        }
    }
    return "";
}

bool has_huge_page_advice(const void* address) { return vm_flags_at(address).find(" hg ") != std::string::npos; }

bool kernel_has_transparent_huge_pages() { return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"); }

TEST(HugePageAdvice, AnonymousMemoryOfTwoMebibytesOrMoreCarriesIt) {
    if (!kernel_has_transparent_huge_pages()) GTEST_SKIP() << "this kernel has no transparent huge pages";
    const util::AnonymousMemory large(4 * kMiB), small(kMiB);
    EXPECT_TRUE(has_huge_page_advice(large.data())) << vm_flags_at(large.data());
    EXPECT_FALSE(has_huge_page_advice(small.data())) << vm_flags_at(small.data());
}

TEST(HugePageAdvice, AMappedFileCarriesIt) {
    if (!kernel_has_transparent_huge_pages()) GTEST_SKIP() << "this kernel has no transparent huge pages";
    const ScratchDir dir;
    const std::string path = dir.file("weights.bin");
    const std::vector<uint8_t> bytes(4 * kMiB, 7);
    write_bytes(path, bytes.data(), bytes.size());
    const util::MappedFile file(path);
    EXPECT_TRUE(has_huge_page_advice(file.data())) << vm_flags_at(file.data());
    EXPECT_EQ(file.data()[3 * kMiB], 7);
}

}  // namespace
}  // namespace k3::testing
