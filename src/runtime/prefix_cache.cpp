#include "runtime/prefix_cache.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_set>

#include "model/kda.h"
#include "runtime/engine.h"
#include "runtime/session_state.h"
#include "util/error.h"

namespace k3::runtime {


struct PrefixCache::Node {
    std::vector<int32_t> edge;  // the tokens from the parent to here
    int64_t depth = 0;          // tokens from the root to here
    Node* parent = nullptr;
    std::map<int32_t, std::unique_ptr<Node>> children;  // by the first token of their edge
    SessionSnapshot state;      // in memory, when held
    std::string file;           // in the folder, when written
    std::list<Node*>::iterator lru;  // valid while in_lru
    bool in_lru = false;
};

PrefixCache::PrefixCache(const Engine& engine, PrefixCacheOptions options)
    : engine_(engine), options_(std::move(options)),
      ram_bytes_(options_.ram_bytes.value_or(engine.prompt_cache_bytes())), root_(std::make_unique<Node>()) {
    if (options_.checkpoint_every <= 0 || options_.checkpoint_every % model::kKdaChunk != 0)
        throw Error("--cache-checkpoint-every must be a positive multiple of " + std::to_string(model::kKdaChunk) +
                    " (the KDA chunk), not " + std::to_string(options_.checkpoint_every));
    if (options_.dir.empty()) return;
    // Writes waiting for the disk hold their states: at most as much as the memory tier.
    disk_ = std::make_unique<PrefixCacheDisk>(
        options_.dir, options_.disk_bytes, ram_bytes_, engine.identity(),
        [this](std::span<const int32_t> tokens, const std::string& path, bool present) {
            on_disk_change(tokens, path, present);
        });
    for (PrefixCacheDisk::File& file : disk_->scan()) node_for(file.tokens)->file = std::move(file.path);
}

PrefixCache::~PrefixCache() = default;

void PrefixCache::on_disk_change(std::span<const int32_t> tokens, const std::string& path, bool present) {
    std::lock_guard lock(mutex_);
    Node* node = node_for(tokens);
    if (present) {
        node->file = path;
    } else if (node->file == path) {
        node->file.clear();
    }
    prune(*node);
}

PrefixCache::Node* PrefixCache::find_deepest(std::span<const int32_t> prompt) const {
    Node* node = root_.get();
    Node* best = nullptr;
    while (node->depth < int64_t(prompt.size())) {
        const auto it = node->children.find(prompt[size_t(node->depth)]);
        if (it == node->children.end()) break;
        Node* child = it->second.get();
        // At least one prompt token must be left to feed.
        if (child->depth >= int64_t(prompt.size()) ||
            !std::equal(child->edge.begin(), child->edge.end(), prompt.begin() + node->depth))
            break;
        if (child->state || !child->file.empty()) best = child;
        node = child;
    }
    return best;
}

int64_t PrefixCache::shared_length(std::span<const int32_t> prompt) const {
    const Node* node = root_.get();
    while (node->depth < int64_t(prompt.size())) {
        const auto it = node->children.find(prompt[size_t(node->depth)]);
        if (it == node->children.end()) break;
        const Node* child = it->second.get();
        const auto rest = prompt.subspan(size_t(node->depth));
        const auto mismatch = std::mismatch(child->edge.begin(), child->edge.end(), rest.begin(), rest.end());
        if (mismatch.first != child->edge.end()) return node->depth + (mismatch.first - child->edge.begin());
        node = child;
    }
    return node->depth;
}

PrefixCache::Node* PrefixCache::node_for(std::span<const int32_t> tokens) {
    Node* node = root_.get();
    size_t pos = 0;
    while (pos < tokens.size()) {
        const auto it = node->children.find(tokens[pos]);
        if (it == node->children.end()) {
            auto child = std::make_unique<Node>();
            child->edge.assign(tokens.begin() + std::ptrdiff_t(pos), tokens.end());
            child->depth = int64_t(tokens.size());
            child->parent = node;
            Node* made = child.get();
            node->children.emplace(tokens[pos], std::move(child));
            return made;
        }
        Node* child = it->second.get();
        const auto mismatch = std::mismatch(child->edge.begin(), child->edge.end(),
                                            tokens.begin() + std::ptrdiff_t(pos), tokens.end());
        const size_t common = size_t(mismatch.first - child->edge.begin());
        if (common < child->edge.size()) {  // split the edge where the tokens leave it
            auto middle = std::make_unique<Node>();
            middle->edge.assign(child->edge.begin(), child->edge.begin() + std::ptrdiff_t(common));
            middle->depth = node->depth + int64_t(common);
            middle->parent = node;
            std::unique_ptr<Node> lower = std::move(it->second);
            lower->edge.erase(lower->edge.begin(), lower->edge.begin() + std::ptrdiff_t(common));
            lower->parent = middle.get();
            middle->children.emplace(lower->edge.front(), std::move(lower));
            it->second = std::move(middle);
            child = it->second.get();
        }
        node = child;
        pos += common;
    }
    return node;
}

// Marks the node as used; with `path`, every state on its path too, the shorter prefixes as the
// more recent. A new state is the most recent (a conversation's next turn resumes from its
// deepest); a hit makes the prefix it shares outlive what extends it (leaves first, as SGLang).
void PrefixCache::touch(Node& node, bool path) {
    for (Node* n = &node; n != root_.get(); n = path ? n->parent : root_.get()) {
        if (!n->state) continue;
        if (n->in_lru) lru_.erase(n->lru);
        lru_.push_front(n);
        n->lru = lru_.begin();
        n->in_lru = true;
    }
}

void PrefixCache::drop_state(Node& node) {
    if (node.in_lru) lru_.erase(node.lru);
    node.in_lru = false;
    node.state.reset();
    prune(node);
}

// Removes the node and its ancestors while they lead nowhere.
void PrefixCache::prune(Node& node) {
    Node* n = &node;
    while (n != root_.get() && !n->state && n->file.empty() && n->children.empty()) {
        Node* parent = n->parent;
        parent->children.erase(n->edge.front());
        n = parent;
    }
}

uint64_t PrefixCache::memory_bytes() const {
    std::unordered_set<const void*> seen;  // a page or KDA state shared by several entries counts once
    uint64_t bytes = 0;
    for (const Node* node : lru_)
        for (const model::LayerState& layer : node->state->sequence.layers) {
            if (layer.kda && seen.insert(layer.kda.get()).second)
                bytes += (layer.kda->conv.size() + layer.kda->recurrent.size()) * sizeof(float);
            for (const auto& page : layer.mla.pages())
                if (seen.insert(page.get()).second) bytes += layer.mla.page_bytes();
        }
    return bytes;
}

void PrefixCache::evict_to_budget() {
    while (!lru_.empty() && memory_bytes() > ram_bytes_) {
        drop_state(*lru_.back());
        ++stats_.evictions;
    }
}

SessionSnapshot PrefixCache::lookup(std::span<const int32_t> prompt, int64_t* shared) {
    std::lock_guard lock(mutex_);
    ++stats_.lookups;
    if (shared) *shared = shared_length(prompt);
    while (Node* node = find_deepest(prompt)) {
        SessionSnapshot state = node->state;
        if (!state) {  // in the folder only
            try {
                state = disk_->load(node->file, engine_);
                if (int64_t(state->tokens.size()) != node->depth ||
                    !std::equal(state->tokens.begin(), state->tokens.end(), prompt.begin()))
                    throw Error(node->file + ": holds another prefix");
            } catch (const Error& e) {
                std::fprintf(stderr, "k3: warning: prompt cache: ignoring %s\n", e.what());
                node->file.clear();
                drop_state(*node);
                continue;
            }
            node->state = state;
        }
        touch(*node, /*path=*/true);
        evict_to_budget();  // may drop what was just loaded; the caller holds it
        ++stats_.hits;
        stats_.reused_tokens += uint64_t(state->tokens.size());
        return state;
    }
    return nullptr;
}

void PrefixCache::insert(const SessionSnapshot& state) {
    if (!state || state->tokens.empty()) return;
    std::lock_guard lock(mutex_);
    Node* node = node_for(state->tokens);
    node->state = state;
    touch(*node, /*path=*/false);
    if (disk_ && node->file.empty()) disk_->write(state);
    evict_to_budget();
}

std::vector<int64_t> PrefixCache::checkpoint_positions(int64_t start, int64_t n_prompt,
                                                       std::span<const int64_t> boundaries) const {
    std::vector<int64_t> positions;
    for (int64_t p = options_.checkpoint_every; p < n_prompt; p += options_.checkpoint_every) positions.push_back(p);
    positions.insert(positions.end(), boundaries.begin(), boundaries.end());
    positions.push_back(n_prompt - 1);
    for (int64_t& p : positions) p -= p % model::kKdaChunk;
    std::erase_if(positions, [&](int64_t p) { return p <= start || p >= n_prompt; });
    std::ranges::sort(positions);
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    return positions;
}

void PrefixCache::flush_disk() {
    if (disk_) disk_->flush();  // not under mutex_: the writer's news takes it
}

void PrefixCache::clear() {
    std::lock_guard lock(mutex_);
    while (!lru_.empty()) drop_state(*lru_.back());
}

PrefixCacheStats PrefixCache::stats() const {
    std::lock_guard lock(mutex_);
    PrefixCacheStats stats = stats_;
    stats.entries = lru_.size();
    stats.bytes = memory_bytes();
    if (disk_) {
        stats.disk_entries = disk_->files();
        stats.disk_bytes = disk_->bytes();
    }
    return stats;
}

}  // namespace k3::runtime
