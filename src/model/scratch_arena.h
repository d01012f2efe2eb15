// A forward pass's intermediate buffers, taken in stack order from memory the calling thread
// keeps across passes: after the first pass of its size, a pass allocates nothing. (Buffers
// allocated afresh for every layer were megabytes each in prefill; glibc mapped them anew and
// faulted them in again, about 8% of prefill.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace k3::model {

class ScratchArena {
public:
    // Buffers taken while a Frame is open go back when it closes; frames nest as scopes do.
    class Frame {
    public:
        explicit Frame(ScratchArena& arena);
        ~Frame();
        Frame(const Frame&) = delete;
        Frame& operator=(const Frame&) = delete;

    private:
        ScratchArena& arena_;
        size_t block_, used_;
    };

    // n uninitialised values, 64-byte aligned, valid until the innermost open Frame closes.
    template <typename T>
    T* take(int64_t n) {
        static_assert(std::is_trivially_destructible_v<T> && alignof(T) <= 64);
        return static_cast<T*>(bytes(size_t(n) * sizeof(T)));
    }
    float* floats(int64_t n) { return take<float>(n); }
    // What the arena holds, taken or not.
    size_t capacity_bytes() const;

private:
    void* bytes(size_t size);

    struct alignas(64) CacheLine {
        std::byte bytes[64];
    };
    struct Block {
        std::unique_ptr<CacheLine[]> lines;
        size_t n_lines = 0, used = 0;
    };
    static Block new_block(size_t n_lines);
    // Blocks after current_ are unused. A pass that outgrew the first block leaves several; when
    // its outermost frame closes they become one block of the most it held at once (peak_lines_),
    // for the next pass.
    std::vector<Block> blocks_;
    size_t current_ = 0, peak_lines_ = 0;
    int open_frames_ = 0;
};

}  // namespace k3::model
