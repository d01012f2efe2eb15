// The prompt cache (issue #13): a radix tree of token prefixes (as SGLang's RadixAttention keeps
// one) whose nodes hold session states, so a request resumes from the longest prefix it shares
// with anything computed before. A KDA state cannot be cut back, so states are stored at chosen
// positions only: every `checkpoint_every` tokens, at each message boundary of a chat request,
// near the end of each prompt and at the end of each generation. Positions inside a prompt are
// rounded down to a KDA chunk boundary (model::kKdaChunk) so that a prefill resumed from one
// chunks exactly as the cold prefill did.
//
// States live in memory under a budget (unique MLA pages and KDA states counted once), evicted
// least recently used first; with a folder they are also written there, off the caller's thread
// and under a budget of their own (prefix_cache_disk.h), and found again after a restart.
// Thread-safe.
//
//   PrefixCache cache(engine, {.ram_bytes = 8 << 30});
//   SessionSnapshot from = cache.lookup(prompt);        // null: nothing shared
//   for (int64_t p : cache.checkpoint_positions(start, prompt.size(), boundaries)) { ...; cache.insert(s.snapshot()); }
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/prefix_cache_disk.h"
#include "runtime/session.h"

namespace k3::runtime {

class Engine;

struct PrefixCacheOptions {
    // Memory for cached states (--cache-ram). Unset: the engine's share of its memory budget for
    // the prompt cache (Engine::prompt_cache_bytes(); 8 GiB without a budget).
    std::optional<uint64_t> ram_bytes = {};
    int64_t checkpoint_every = 256;          // tokens between checkpoints (--cache-checkpoint-every)
    std::string dir = {};                    // disk tier (--cache-dir); empty: none
    uint64_t disk_bytes = uint64_t(32) << 30;  // the disk tier's budget (--cache-disk)
};

struct PrefixCacheStats {
    size_t entries = 0;       // states in memory
    size_t disk_entries = 0;  // states in the folder
    uint64_t bytes = 0;       // memory they hold (shared pages once)
    uint64_t disk_bytes = 0;  // the folder's files
    uint64_t lookups = 0, hits = 0, reused_tokens = 0, evictions = 0;
};

class PrefixCache {
public:
    // Throws k3::Error for a checkpoint_every that is not a positive multiple of the KDA chunk, or
    // a folder that cannot be created. Files in the folder that are not this model's states are
    // skipped with a warning on stderr.
    PrefixCache(const Engine& engine, PrefixCacheOptions options);
    ~PrefixCache();
    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    // The cached state sharing the longest prefix with `prompt` that leaves at least one prompt
    // token to feed (its logits pick the next token); null when none. *shared (optional): how
    // many of the prompt's first tokens some cached prefix also starts with, a checkpoint
    // position worth adding (where two prompts part, e.g. after a common system prompt).
    SessionSnapshot lookup(std::span<const int32_t> prompt, int64_t* shared = nullptr);
    // Stores a state under its tokens (replacing one stored there), then evicts down to the budget.
    void insert(const SessionSnapshot& state);
    // Where a prefill of prompt[start, n_prompt) should pause to store a state, ascending: the
    // multiples of checkpoint_every, the message boundaries and n_prompt - 1, each rounded down
    // to a KDA chunk boundary, strictly between start and n_prompt.
    std::vector<int64_t> checkpoint_positions(int64_t start, int64_t n_prompt,
                                              std::span<const int64_t> boundaries) const;
    // Drops every state in memory (the folder stays).
    void clear();
    // Waits until every state stored so far is in the folder (tests; shutdown does it anyway).
    void flush_disk();

    PrefixCacheStats stats() const;
    const PrefixCacheOptions& options() const { return options_; }
    uint64_t ram_bytes() const { return ram_bytes_; }

private:
    struct Node;
    Node* find_deepest(std::span<const int32_t> prompt) const;  // under mutex_
    int64_t shared_length(std::span<const int32_t> prompt) const;  // under mutex_
    Node* node_for(std::span<const int32_t> tokens);              // under mutex_; made if absent
    void touch(Node& node, bool path);
    void evict_to_budget();
    void drop_state(Node& node);
    void prune(Node& node);
    uint64_t memory_bytes() const;
    // The disk tier's news: a state's file written or deleted (on its writer thread).
    void on_disk_change(std::span<const int32_t> tokens, const std::string& path, bool present);

    const Engine& engine_;
    PrefixCacheOptions options_;
    uint64_t ram_bytes_;
    mutable std::mutex mutex_;
    std::unique_ptr<Node> root_;
    std::list<Node*> lru_;  // nodes holding a state in memory, most recently used first
    PrefixCacheStats stats_;
    std::unique_ptr<PrefixCacheDisk> disk_;  // last: its writer thread stops first
};

}  // namespace k3::runtime
