// Private anonymous memory of its own mapping: page aligned (a valid O_DIRECT buffer), and
// returned to the kernel at once when the object dies (malloc could keep large freed blocks).
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::util {

class AnonymousMemory {
public:
    AnonymousMemory() = default;
    // Throws k3::Error when the kernel refuses the mapping.
    explicit AnonymousMemory(size_t bytes);
    ~AnonymousMemory();
    AnonymousMemory(AnonymousMemory&& other) noexcept;
    AnonymousMemory& operator=(AnonymousMemory&& other) noexcept;
    AnonymousMemory(const AnonymousMemory&) = delete;
    AnonymousMemory& operator=(const AnonymousMemory&) = delete;

    uint8_t* data() const { return data_; }
    size_t size() const { return size_; }

private:
    void release();
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace k3::util
