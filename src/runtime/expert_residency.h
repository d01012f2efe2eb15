// What callers choose and see of the expert cache (expert_cache.h) without its machinery:
// how it is filled at start and its cumulative figures.
#pragma once

#include <cstdint>

namespace k3::runtime {

enum class ExpertWarmup {
    none,  // start empty
    hot,   // the experts with the highest scores, until the cache is full
    all,   // every expert in layer order, until the cache is full
};

// Cumulative figures; differences of two snapshots give a phase's share.
struct ExpertCacheCounters {
    uint64_t hits = 0;            // requested experts that were resident
    uint64_t misses = 0;          // requested experts that had to be read
    uint64_t bytes_read = 0;      // from disk (4 KiB-aligned spans), warm-up included
    double wait_seconds = 0.0;    // time the compute thread blocked waiting for a read
    uint64_t resident_bytes = 0;  // held now
    uint64_t peak_bytes = 0;      // most ever held
    uint64_t capacity = 0;
};

}  // namespace k3::runtime
