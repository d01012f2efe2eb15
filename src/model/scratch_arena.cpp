#include "model/scratch_arena.h"

#include <algorithm>
#include <cassert>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

namespace k3::model {

namespace {

// Under AddressSanitizer, memory no buffer holds is poisoned and each buffer is followed by a
// poisoned line, so that an overrun or a use after its Frame closed is reported as it would be
// for buffers of their own.
#ifdef __SANITIZE_ADDRESS__
constexpr size_t kRedzoneLines = 1;
void poison(const void* p, size_t bytes) { ASAN_POISON_MEMORY_REGION(p, bytes); }
void unpoison(const void* p, size_t bytes) { ASAN_UNPOISON_MEMORY_REGION(p, bytes); }
#else
constexpr size_t kRedzoneLines = 0;
void poison(const void*, size_t) {}
void unpoison(const void*, size_t) {}
#endif

}  // namespace

ScratchArena::Block ScratchArena::new_block(size_t n_lines) {
    Block block{std::make_unique_for_overwrite<CacheLine[]>(n_lines), n_lines, 0};
    poison(block.lines.get(), n_lines * sizeof(CacheLine));
    return block;
}

ScratchArena::Frame::Frame(ScratchArena& arena)
    : arena_(arena), block_(arena.current_), used_(arena.blocks_.empty() ? 0 : arena.blocks_[arena.current_].used) {
    ++arena_.open_frames_;
}

ScratchArena::Frame::~Frame() {
    std::vector<Block>& blocks = arena_.blocks_;
    for (size_t b = block_; b < blocks.size(); ++b) {
        const size_t kept = b == block_ ? used_ : 0;
        poison(blocks[b].lines.get() + kept, (blocks[b].used - kept) * sizeof(CacheLine));
        blocks[b].used = kept;
    }
    arena_.current_ = block_;
    if (--arena_.open_frames_ > 0 || blocks.size() <= 1) return;
    blocks.clear();
    blocks.push_back(new_block(arena_.peak_lines_));
}

size_t ScratchArena::capacity_bytes() const {
    size_t lines = 0;
    for (const Block& block : blocks_) lines += block.n_lines;
    return lines * sizeof(CacheLine);
}

void* ScratchArena::bytes(size_t size) {
    assert(open_frames_ > 0);
    const size_t lines = (size + sizeof(CacheLine) - 1) / sizeof(CacheLine) + kRedzoneLines;
    while (current_ < blocks_.size() && blocks_[current_].used + lines > blocks_[current_].n_lines) ++current_;
    if (current_ == blocks_.size()) {
        // Doubling what the arena holds, so that a pass of a new size grows it a few times at most.
        blocks_.push_back(new_block(std::max(lines, capacity_bytes() / sizeof(CacheLine))));
    }
    Block& block = blocks_[current_];
    CacheLine* first = block.lines.get() + block.used;
    block.used += lines;
    unpoison(first, size);
    size_t in_use = 0;
    for (size_t b = 0; b <= current_; ++b) in_use += blocks_[b].used;
    peak_lines_ = std::max(peak_lines_, in_use);
    return first;
}

}  // namespace k3::model
