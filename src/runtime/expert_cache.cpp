#include "runtime/expert_cache.h"

#include <algorithm>
#include <chrono>

#include "gguf/gguf_file.h"
#include "model/hparams.h"
#include "util/error.h"
#include "util/progress.h"

namespace k3::runtime {

namespace {

const char* const kStackedNames[3] = {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"};

}  // namespace

std::vector<ExpertCache::Layer> ExpertCache::file_layout(const gguf::GgufFile& file, const model::HParams& hp) {
    std::vector<Layer> layers(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        if (hp.is_dense_ffn(il)) continue;
        Layer& layer = layers[size_t(il)];
        layer.moe = true;
        StackedTensor* stacked[3] = {&layer.gate, &layer.up, &layer.down};
        for (int i = 0; i < 3; ++i) {
            const std::string name = "blk." + std::to_string(il) + "." + kStackedNames[i];
            const gguf::TensorInfo* t = file.find_tensor(name);
            if (!t || t->ne.size() < 3 || t->ne[2] != hp.n_expert)
                throw Error(file.path() + ": tensor " + name + " is not a stack of " + std::to_string(hp.n_expert) + " experts");
            const tensor::TypeTraits& traits = tensor::traits(t->type);
            // ggml [cols, rows per expert, n_expert]; the binder has checked the shapes
            stacked[i]->part = t->part;
            stacked[i]->file_offset = t->file_offset;
            stacked[i]->bytes_per_expert = t->n_bytes / uint64_t(hp.n_expert);
            stacked[i]->shape = {&traits, nullptr, t->ne[0], t->ne[1], tensor::row_bytes(traits, t->ne[0])};
        }
    }
    return layers;
}

uint64_t ExpertCache::entry_bytes(const Layer& layer, int32_t expert) {
    uint64_t bytes = 0;
    for (const StackedTensor* t : {&layer.gate, &layer.up, &layer.down})
        bytes += util::UncachedReader::span_bytes(t->file_offset + uint64_t(expert) * t->bytes_per_expert, t->bytes_per_expert);
    return bytes;
}

uint64_t ExpertCache::largest_expert_bytes(const gguf::GgufFile& file, const model::HParams& hp) {
    uint64_t largest = 0;
    for (const Layer& layer : file_layout(file, hp))
        if (layer.moe)
            for (int32_t e = 0; e < hp.n_expert; ++e) largest = std::max(largest, entry_bytes(layer, e));
    return largest;
}

ExpertCache::ExpertCache(const gguf::GgufFile& file, const model::HParams& hp, uint64_t capacity, RoutingStats stats,
                         int io_threads)
    : n_expert_(hp.n_expert), layers_(file_layout(file, hp)), stats_(std::move(stats)),
      entries_(size_t(hp.n_layer * hp.n_expert)), capacity_(capacity), io_(io_threads) {
    for (const std::string& path : file.part_paths()) parts_.push_back(std::make_unique<util::UncachedReader>(path));
    counters_.capacity = capacity;
}

ExpertCache::~ExpertCache() {
    std::unique_lock lock(mutex_);
    landed_.wait(lock, [this] { return in_flight_ == 0; });
}

void ExpertCache::read_entry(int64_t il, int32_t expert) {
    Entry& e = entry(il, expert);
    const Layer& layer = layers_[size_t(il)];
    std::string error;
    model::ExpertMatrices matrices{expert, layer.gate.shape, layer.up.shape, layer.down.shape};
    try {
        uint8_t* buffer = e.memory.data();
        const StackedTensor* stacked[3] = {&layer.gate, &layer.up, &layer.down};
        kernels::MatrixView* views[3] = {&matrices.gate, &matrices.up, &matrices.down};
        for (int i = 0; i < 3; ++i) {
            const uint64_t offset = stacked[i]->file_offset + uint64_t(expert) * stacked[i]->bytes_per_expert;
            views[i]->data = parts_[stacked[i]->part]->read(offset, stacked[i]->bytes_per_expert, buffer);
            buffer += util::UncachedReader::span_bytes(offset, stacked[i]->bytes_per_expert);
        }
    } catch (const std::exception& ex) {
        error = ex.what();
    }
    {
        std::lock_guard lock(mutex_);
        e.matrices = matrices;
        e.error = std::move(error);
        e.state = State::ready;
        landed_bytes_ += e.memory.size();
        if (e.pinned) ready_.push_back(expert);
        --in_flight_;
    }
    landed_.notify_all();
}

util::AnonymousMemory ExpertCache::evict_one() {
    std::vector<ExpertKey> candidates;
    for (int64_t il = 0; il < int64_t(layers_.size()); ++il)
        for (int32_t x = 0; x < n_expert_; ++x) {
            const Entry& e = entry(il, x);
            if (e.state == State::ready && !e.pinned) candidates.push_back({il, x});
        }
    if (candidates.empty()) return {};
    const ExpertKey victim = stats_.lowest(candidates);
    Entry& e = entry(victim.layer, victim.expert);
    held_ -= e.memory.size();
    e.state = State::absent;
    return std::move(e.memory);
}

bool ExpertCache::start_read(std::unique_lock<std::mutex>&, int64_t il, int32_t expert) {
    const uint64_t bytes = entry_bytes(layers_[size_t(il)], expert);
    util::AnonymousMemory reusable;
    while (held_ + bytes > capacity_) {
        util::AnonymousMemory freed = evict_one();
        if (freed.size() == 0) return false;
        if (freed.size() == bytes) reusable = std::move(freed);
    }
    Entry& e = entry(il, expert);
    e.memory = reusable.size() == bytes ? std::move(reusable) : util::AnonymousMemory(bytes);
    e.state = State::loading;
    held_ += bytes;
    counters_.peak_bytes = std::max(counters_.peak_bytes, held_);
    counters_.bytes_read += bytes;
    ++in_flight_;
    io_.submit([this, il, expert] { read_entry(il, expert); });
    return true;
}

void ExpertCache::pump(std::unique_lock<std::mutex>& lock) {
    while (!pending_.empty() && start_read(lock, layer_, pending_.front())) pending_.pop_front();
}

void ExpertCache::warm_up(ExpertWarmup mode, const std::function<bool(int64_t, int32_t)>& runs_here,
                          std::FILE* progress) {
    if (mode == ExpertWarmup::none) return;
    std::vector<ExpertKey> order;
    for (int64_t il = 0; il < int64_t(layers_.size()); ++il)
        if (layers_[size_t(il)].moe)
            for (int32_t x = 0; x < n_expert_; ++x)
                if (runs_here(il, x) && (mode == ExpertWarmup::all || stats_.score(il, x) > 0)) order.push_back({il, x});
    if (mode == ExpertWarmup::hot)
        std::stable_sort(order.begin(), order.end(), [this](const ExpertKey& a, const ExpertKey& b) {
            return stats_.score(a.layer, a.expert) > stats_.score(b.layer, b.expert);
        });
    std::unique_lock lock(mutex_);
    const uint64_t landed_before = landed_bytes_;
    uint64_t bytes = 0;
    size_t started = 0;
    for (const ExpertKey& k : order) {
        // Only into free room: warm-up never evicts what it loaded.
        const uint64_t entry = entry_bytes(layers_[size_t(k.layer)], k.expert);
        if (held_ + entry > capacity_) break;
        start_read(lock, k.layer, k.expert);
        bytes += entry;
        ++started;
    }
    util::Progress bar(progress, bytes, started);
    for (uint64_t shown_bytes = landed_before; in_flight_ > 0;) {
        const int before = in_flight_;
        landed_.wait(lock, [&] { return in_flight_ < before; });
        bar.advance(landed_bytes_ - shown_bytes, "routed experts", size_t(before - in_flight_));
        shown_bytes = landed_bytes_;
    }
    bar.finish();
}

void ExpertCache::routed(int64_t il, std::span<const int32_t> experts, std::span<const int64_t> token_counts) {
    std::unique_lock lock(mutex_);
    stats_.record(il, experts, token_counts);
}

void ExpertCache::request(int64_t il, std::span<const int32_t> experts, std::span<const int64_t>) {
    std::unique_lock lock(mutex_);
    if (to_hand_out_ != 0 || held_out_ != 0) throw Error("expert cache: a layer's experts were requested before the last layer released its own");
    layer_ = il;
    pending_.clear();
    ready_.clear();
    for (int32_t x : experts) {
        Entry& e = entry(il, x);
        e.pinned = true;
        if (e.state == State::ready) {
            ready_.push_back(x);
            ++counters_.hits;
        } else {
            pending_.push_back(x);
            ++counters_.misses;
        }
    }
    to_hand_out_ = experts.size();
    pump(lock);
}

std::span<const model::ExpertMatrices> ExpertCache::take_resident() {
    std::unique_lock lock(mutex_);
    taken_.clear();
    if (to_hand_out_ == 0) return {};
    while (ready_.empty()) {
        pump(lock);
        if (in_flight_ == 0 && ready_.empty())
            throw Error("expert cache: no room to read layer " + std::to_string(layer_) + "'s expert " +
                        std::to_string(pending_.front()) + " (capacity " + std::to_string(capacity_) + " bytes)");
        const auto start = std::chrono::steady_clock::now();
        landed_.wait(lock, [this] { return !ready_.empty() || in_flight_ == 0; });
        counters_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    for (; !ready_.empty(); ready_.pop_front()) {
        const int32_t x = ready_.front();
        --to_hand_out_;
        ++held_out_;
        Entry& e = entry(layer_, x);
        if (!e.error.empty()) {
            const std::string error = std::move(e.error);
            held_ -= e.memory.size();
            e.memory = util::AnonymousMemory();
            e.state = State::absent;
            abandon_request();
            throw Error(error);
        }
        taken_.push_back(e.matrices);
    }
    return taken_;
}

void ExpertCache::abandon_request() {
    // Reads already started still land (in_flight_); they stay as ordinary unpinned entries.
    for (Entry* e = &entry(layer_, 0); e != &entry(layer_, 0) + n_expert_; ++e) e->pinned = false;
    pending_.clear();
    ready_.clear();
    to_hand_out_ = 0;
    held_out_ = 0;
}

void ExpertCache::release(int32_t expert) {
    std::unique_lock lock(mutex_);
    entry(layer_, expert).pinned = false;
    --held_out_;
    pump(lock);  // its room may let a waiting read start
}

ExpertCacheCounters ExpertCache::counters() const {
    std::lock_guard lock(mutex_);
    ExpertCacheCounters c = counters_;
    c.resident_bytes = held_;
    return c;
}

}  // namespace k3::runtime
