// A read-only memory map of a whole file: the bytes are the page cache's, never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3::util {

class MappedFile {
public:
    // Maps the file read-only. Throws k3::Error naming the file if it cannot be opened or mapped.
    explicit MappedFile(std::string path);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    void unmap();

    std::string path_;
    const uint8_t* data_ = nullptr;  // null for an empty file
    size_t size_ = 0;
};

// Unmaps the pages holding [data, data + n_bytes) of a MappedFile from this process (they are
// read back if touched again): a reader that goes through a file larger than memory once then
// holds only what it is working on, and the page cache may drop the rest.
void release_mapped_pages(const uint8_t* data, size_t n_bytes);

// Reads the pages holding [data, data + n_bytes) of a MappedFile into memory and maps them now,
// so that touching them later never waits on the disk. Throws k3::Error when the file cannot be
// read there (the error a touch would otherwise raise as SIGBUS mid-pass).
void populate_mapped_pages(const uint8_t* data, size_t n_bytes);

}  // namespace k3::util
