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

}  // namespace k3::util
