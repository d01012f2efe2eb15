#include "model/scratch_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace k3 {
namespace {

using model::ScratchArena;

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

// Fills n floats from `first` with first_value, first_value + 1, ...
void fill(float* p, int64_t n, float first_value) {
    for (int64_t i = 0; i < n; ++i) p[i] = first_value + float(i);
}
bool holds(const float* p, int64_t n, float first_value) {
    for (int64_t i = 0; i < n; ++i)
        if (p[i] != first_value + float(i)) return false;
    return true;
}

TEST(ScratchArena, BuffersOfAFrameAreDisjointAlignedAndSurviveGrowth) {
    ScratchArena arena;
    const ScratchArena::Frame frame(arena);
    std::vector<std::pair<float*, int64_t>> taken;
    // Sizes that are not multiples of a cache line, growing past each block the arena adds.
    for (int64_t i = 0, n = 3; i < 12; ++i, n = n * 3 + 1) {
        float* p = arena.floats(n);
        ASSERT_TRUE(aligned(p)) << "buffer " << i;
        fill(p, n, float(1000 * i));
        taken.emplace_back(p, n);
    }
    for (size_t i = 0; i < taken.size(); ++i)
        EXPECT_TRUE(holds(taken[i].first, taken[i].second, float(1000 * i))) << "buffer " << i;
}

TEST(ScratchArena, ClosedFramesGiveTheirBuffersBack) {
    ScratchArena arena;
    const ScratchArena::Frame pass(arena);
    float* kept = arena.floats(100);
    fill(kept, 100, 7.0f);
    float* first_inner = nullptr;
    {
        const ScratchArena::Frame layer(arena);
        first_inner = arena.floats(50);
        EXPECT_NE(first_inner, kept);
        {
            const ScratchArena::Frame nested(arena);
            EXPECT_NE(arena.floats(10), first_inner);
        }
    }
    const ScratchArena::Frame next_layer(arena);
    EXPECT_EQ(arena.floats(50), first_inner);  // the same memory again
    EXPECT_TRUE(holds(kept, 100, 7.0f));       // the outer frame's buffer untouched
}

TEST(ScratchArena, APassOfTheSameSizesAllocatesNothingAfterTheFirst) {
    ScratchArena arena;
    const auto pass = [&] {
        const ScratchArena::Frame frame(arena);
        std::vector<float*> got;
        for (int64_t n : {int64_t(1) << 10, int64_t(1) << 16, int64_t(5), int64_t(1) << 18}) {
            const ScratchArena::Frame layer(arena);
            got.push_back(arena.floats(n));
            got.push_back(arena.floats(n / 2 + 1));
        }
        return got;
    };
    EXPECT_EQ(arena.capacity_bytes(), 0u);
    pass();
    // The most the first pass held at once: its last layer's two buffers (and under
    // AddressSanitizer a poisoned line after each), the rest given back.
#ifdef __SANITIZE_ADDRESS__
    constexpr size_t kRedzones = 2 * 64;
#else
    constexpr size_t kRedzones = 0;
#endif
    const size_t after_first = arena.capacity_bytes();
    EXPECT_EQ(after_first, ((size_t(1) << 18) + (size_t(1) << 17) + 16) * sizeof(float) + kRedzones);
    const std::vector<float*> second = pass();
    EXPECT_EQ(arena.capacity_bytes(), after_first);
    EXPECT_EQ(pass(), second);  // one block now: every pass takes the same addresses
    EXPECT_EQ(arena.capacity_bytes(), after_first);
}

#ifdef __SANITIZE_ADDRESS__
TEST(ScratchArenaDeathTest, AddressSanitizerSeesOverrunsAndBuffersUsedAfterTheirFrame) {
    ScratchArena arena;
    const ScratchArena::Frame pass(arena);
    float* kept = arena.floats(16);
    EXPECT_DEATH(static_cast<volatile float*>(kept)[16] = 1.0f, "use-after-poison");
    float* released = nullptr;
    {
        const ScratchArena::Frame layer(arena);
        released = arena.floats(16);
    }
    EXPECT_DEATH(static_cast<volatile float*>(released)[0] = 1.0f, "use-after-poison");
}
#endif

}  // namespace
}  // namespace k3
