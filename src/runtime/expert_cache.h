// The expert cache (issue #7): under a memory budget, routed experts are the unit of memory.
// Each (layer, expert) entry holds that expert's gate, up and down rows in its own anonymous
// mapping, read from the file past the page cache by a few I/O threads while the layer computes
// what does not need them. At most `capacity` bytes are ever held: when the experts a layer
// needs do not fit, the lowest-scoring unpinned entries (RoutingStats) are evicted, and when
// even that is not enough the layer's experts stream through in turn (read, compute, release).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "model/expert_source.h"
#include "runtime/expert_residency.h"
#include "runtime/io_pool.h"
#include "runtime/routing_stats.h"
#include "util/anonymous_memory.h"
#include "util/uncached_reader.h"

namespace k3::gguf { class GgufFile; }
namespace k3::model { struct HParams; }

namespace k3::runtime {

class ExpertCache final : public model::ExpertSource {
public:
    // The experts of every MoE layer of `file`, never holding more than `capacity` bytes.
    ExpertCache(const gguf::GgufFile& file, const model::HParams& hp, uint64_t capacity, RoutingStats stats,
                int io_threads = 8);
    ~ExpertCache() override;

    // One expert's gate + up + down as the cache holds them (aligned spans), for the largest
    // expert of the file: the budget must hold two.
    static uint64_t largest_expert_bytes(const gguf::GgufFile& file, const model::HParams& hp);

    // Fills the cache before the first token with experts runs_here(layer, expert) accepts (a
    // parallel rank's own); returns when every read has landed.
    // Reports its progress to `progress` (util::Progress; null: silent).
    void warm_up(ExpertWarmup mode, const std::function<bool(int64_t, int32_t)>& runs_here,
                 std::FILE* progress = nullptr);

    void routed(int64_t il, std::span<const int32_t> experts, std::span<const int64_t> token_counts) override;
    void request(int64_t il, std::span<const int32_t> experts, std::span<const int64_t> token_counts) override;
    std::span<const model::ExpertMatrices> take_resident() override;
    void release(int32_t expert) override;

    ExpertCacheCounters counters() const;
    const RoutingStats& routing_stats() const { return stats_; }

private:
    // Where one stacked expert tensor of a layer lies in the file.
    struct StackedTensor {
        uint32_t part = 0;
        uint64_t file_offset = 0;
        uint64_t bytes_per_expert = 0;
        kernels::MatrixView shape;  // type, cols, rows per expert, row stride; data unset
    };
    struct Layer {
        bool moe = false;
        StackedTensor gate, up, down;
    };
    enum class State : uint8_t { absent, loading, ready };
    struct Entry {
        State state = State::absent;
        bool pinned = false;  // requested by the current layer and not yet released
        util::AnonymousMemory memory;
        model::ExpertMatrices matrices;
        std::string error;    // a failed read
    };

    static std::vector<Layer> file_layout(const gguf::GgufFile& file, const model::HParams& hp);
    static uint64_t entry_bytes(const Layer& layer, int32_t expert);
    Entry& entry(int64_t il, int32_t expert) { return entries_[size_t(il * n_expert_ + expert)]; }
    // Starts reading an absent entry if it fits, evicting as needed; false if it cannot fit now.
    bool start_read(std::unique_lock<std::mutex>& lock, int64_t il, int32_t expert);
    void read_entry(int64_t il, int32_t expert);  // on an I/O thread
    // Evicts the lowest-scoring unpinned resident entry and hands back its memory (empty when
    // nothing can be evicted), so that a read of the same size can reuse it: no unmapping,
    // mapping and zero-filling of fresh pages.
    util::AnonymousMemory evict_one();
    void abandon_request();                       // after a failed read: unpin, forget the layer
    void pump(std::unique_lock<std::mutex>& lock);  // starts pending reads that fit

    int64_t n_expert_;
    std::vector<Layer> layers_;
    std::vector<std::unique_ptr<util::UncachedReader>> parts_;
    RoutingStats stats_;

    mutable std::mutex mutex_;
    std::condition_variable landed_;
    std::vector<Entry> entries_;  // [n_layer][n_expert]
    uint64_t capacity_;
    uint64_t held_ = 0;  // bytes of loading and ready entries
    int in_flight_ = 0;
    uint64_t landed_bytes_ = 0;  // of every read that has landed, for warm_up's progress
    ExpertCacheCounters counters_;
    // The current request.
    int64_t layer_ = -1;
    std::deque<int32_t> pending_;  // not yet started (no room yet)
    std::deque<int32_t> ready_;    // resident, not yet handed out: hits first, then reads as they land
    size_t to_hand_out_ = 0;       // requested and not yet handed out
    size_t held_out_ = 0;          // handed out and not yet released
    std::vector<model::ExpertMatrices> taken_;  // the last take_resident()'s experts

    IoPool io_;  // last: joined first, while the entries its jobs write still exist
};

}  // namespace k3::runtime
