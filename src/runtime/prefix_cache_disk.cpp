#include "runtime/prefix_cache_disk.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "runtime/session_file.h"
#include "util/error.h"

namespace k3::runtime {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kFileSuffix = ".k3state";

void warn(const std::string& message) { std::fprintf(stderr, "k3: warning: prompt cache: %s\n", message.c_str()); }

// Stamps a file's last use as its write time, so that the order survives a restart. Written files
// are stamped too, from the same clock: the kernel's own date of a write may come from a coarser
// clock than a stamp taken just before it (a sanitized CI run once restarted with the order of
// a load and the write after it reversed).
void mark_used(const std::string& path) {
    std::error_code ec;
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
}

}  // namespace

PrefixCacheDisk::PrefixCacheDisk(std::string dir, uint64_t budget_bytes, uint64_t max_pending_bytes, uint64_t identity,
                                 Listener listener)
    : dir_(std::move(dir)), budget_bytes_(budget_bytes), max_pending_bytes_(max_pending_bytes), identity_(identity),
      listener_(std::move(listener)), writer_(identity) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw Error("--cache-dir " + dir_ + ": " + ec.message());
}

PrefixCacheDisk::~PrefixCacheDisk() = default;

std::string PrefixCacheDisk::path_for(std::span<const int32_t> tokens) const {
    const std::string_view bytes(reinterpret_cast<const char*>(tokens.data()), tokens.size_bytes());
    char name[32];
    std::snprintf(name, sizeof name, "%016zx", std::hash<std::string_view>{}(bytes));
    return (fs::path(dir_) / (name + std::string(kFileSuffix))).string();
}

std::vector<PrefixCacheDisk::File> PrefixCacheDisk::scan() {
    struct Found {
        File file;
        uint64_t bytes;
        fs::file_time_type used;
    };
    std::vector<Found> found;
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
        const std::string path = entry.path().string();
        if (!entry.is_regular_file() || !path.ends_with(kFileSuffix)) continue;
        try {
            std::error_code size_ec, time_ec;
            Found f{{read_session_file_tokens(path, identity_), path}, entry.file_size(size_ec), entry.last_write_time(time_ec)};
            if (size_ec || time_ec) throw Error(path + ": " + (size_ec ? size_ec : time_ec).message());
            found.push_back(std::move(f));
        } catch (const Error& e) {
            warn(std::string("ignoring ") + e.what());
        }
    }
    if (ec) throw Error("--cache-dir " + dir_ + ": " + ec.message());
    std::ranges::sort(found, [](const Found& a, const Found& b) { return a.used < b.used; });
    std::vector<File> kept;
    std::lock_guard lock(mutex_);
    for (Found& f : found) record(f.file.path, f.file.tokens, f.bytes);
    delete_over_budget();
    for (Found& f : found)
        if (stored_.contains(f.file.path)) kept.push_back(std::move(f.file));
    return kept;
}

void PrefixCacheDisk::record(const std::string& path, std::vector<int32_t> tokens, uint64_t bytes) {
    auto [it, added] = stored_.try_emplace(path);
    Stored& stored = it->second;
    if (added) {
        lru_.push_front(path);
    } else {
        stored_bytes_ -= stored.bytes;
        lru_.splice(lru_.begin(), lru_, stored.lru);
    }
    stored.lru = lru_.begin();
    stored.tokens = std::move(tokens);
    stored.bytes = bytes;
    stored_bytes_ += bytes;
}

std::vector<PrefixCacheDisk::File> PrefixCacheDisk::delete_over_budget() {
    std::vector<File> deleted;
    while (stored_bytes_ > budget_bytes_ && !lru_.empty()) {
        const auto it = stored_.find(lru_.back());
        std::error_code ec;
        fs::remove(it->first, ec);
        if (ec) warn(it->first + ": " + ec.message());
        stored_bytes_ -= it->second.bytes;
        deleted.push_back({std::move(it->second.tokens), it->first});
        lru_.pop_back();
        stored_.erase(it);
    }
    return deleted;
}

void PrefixCacheDisk::tell(const std::vector<File>& files, bool present) const {
    for (const File& file : files) listener_(file.tokens, file.path, present);
}

void PrefixCacheDisk::write(const SessionSnapshot& state) {
    if (!state || state->tokens.empty()) return;
    std::string path = path_for(state->tokens);
    {
        std::lock_guard lock(mutex_);
        if (stored_.contains(path) || pending_.contains(path)) return;
        const uint64_t bytes = state->sequence.bytes();
        if (pending_bytes_ > 0 && pending_bytes_ + bytes > max_pending_bytes_) return;  // the disk is behind: memory only
        pending_bytes_ += bytes;
        pending_.emplace(path, state);
    }
    writer_.write(state, path, [this, state, path](uint64_t bytes, const std::string& error) {
        if (!error.empty()) warn(error);
        written(state, path, bytes);
    });
}

void PrefixCacheDisk::written(const SessionSnapshot& state, const std::string& path, uint64_t bytes) {
    if (bytes > 0) mark_used(path);
    std::unique_lock lock(mutex_);
    if (bytes > 0) record(path, state->tokens, bytes);
    const std::vector<File> deleted = delete_over_budget();
    const bool kept = stored_.contains(path);
    lock.unlock();
    if (kept) listener_(state->tokens, path, true);
    tell(deleted, false);
    lock.lock();
    pending_.erase(path);  // only now: flush() returns once the listener knows
    pending_bytes_ -= state->sequence.bytes();
    changed_.notify_all();
}

SessionSnapshot PrefixCacheDisk::load(const std::string& path, const Engine& engine) {
    {
        std::lock_guard lock(mutex_);
        if (const auto it = pending_.find(path); it != pending_.end()) return it->second;
        if (const auto it = stored_.find(path); it != stored_.end()) lru_.splice(lru_.begin(), lru_, it->second.lru);
    }
    try {
        auto state = std::make_shared<const SessionState>(read_session_file(path, engine, identity_));
        mark_used(path);
        return state;
    } catch (const Error&) {
        std::lock_guard lock(mutex_);
        if (const auto it = stored_.find(path); it != stored_.end()) {
            stored_bytes_ -= it->second.bytes;
            lru_.erase(it->second.lru);
            stored_.erase(it);
        }
        throw;
    }
}

void PrefixCacheDisk::flush() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return pending_.empty(); });
}

size_t PrefixCacheDisk::files() const {
    std::lock_guard lock(mutex_);
    return stored_.size();
}

uint64_t PrefixCacheDisk::bytes() const {
    std::lock_guard lock(mutex_);
    return stored_bytes_;
}

}  // namespace k3::runtime
