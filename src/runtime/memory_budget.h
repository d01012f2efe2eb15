// How much memory k3 may use: the process's memory limit (cgroup v2 or v1) and the memory the
// kernel reports available, less a margin; and the split of a budget into the resident trunk,
// working memory and the expert cache (issue #7).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace k3::model { struct HParams; }

namespace k3::runtime {

// A cgroup memory limit file's contents (v2 memory.max, v1 memory.limit_in_bytes); nullopt when
// unlimited ("max", or v1's page-rounded LONG_MAX and anything else beyond 2^60).
std::optional<uint64_t> parse_cgroup_limit(std::string_view contents);

// The memory cgroup paths of a process from its /proc/PID/cgroup contents: v2 from the "0::PATH"
// line, v1 from the line whose controller list includes "memory".
struct CgroupPaths {
    std::optional<std::string> v2, v1;
};
CgroupPaths parse_proc_cgroup(std::string_view contents);

// MemAvailable from /proc/meminfo contents, in bytes; nullopt when absent.
std::optional<uint64_t> parse_mem_available(std::string_view meminfo);

// The tightest limit on this process: its cgroup's memory limit (or an ancestor's) and
// MemAvailable, whichever is smaller; `source` says which ("cgroup limit", "available memory").
struct MemoryLimit {
    uint64_t bytes = 0;
    std::string source;
};
std::optional<MemoryLimit> detect_memory_limit();

// The limit less a margin for what the working-memory estimate misses: max(5%, 64 MiB). (The
// estimate is generous, and reads bypass the page cache, which cgroup v1 would count.)
uint64_t budget_from_limit(uint64_t limit_bytes);

// Memory a forward pass needs besides the weights, estimated from the shape: one sequence's
// KDA states and MLA cache over 4096 tokens, activations of a 512-token batch, 64 rows of
// logits, and 64 MiB for the runtime itself (code, thread stacks and buffers, allocator slack).
// For one rank of n_ranks: its share of the heads' and FFN rows' states and intermediates.
uint64_t estimate_working_bytes(const model::HParams& hp, int n_ranks = 1);

// A budget split: the trunk and working memory come first, the expert cache gets the rest.
struct BudgetSplit {
    uint64_t budget = 0;
    uint64_t trunk = 0;           // every non-expert tensor, resident
    uint64_t working = 0;         // states, activations, logits, the runtime itself (an estimate)
    uint64_t largest_expert = 0;  // one expert's gate + up + down as read (4 KiB aligned)
    uint64_t cache_capacity = 0;  // budget - trunk - working
};
// `label` names the budget in the message ("--mem-budget", "the memory budget").
// Throws k3::Error with the numbers when the budget is below trunk + working + 2 x the largest
// expert (the least that lets one expert compute while the next one is read).
BudgetSplit split_budget(const std::string& label, uint64_t budget, uint64_t trunk, uint64_t working, uint64_t largest_expert);

}  // namespace k3::runtime
