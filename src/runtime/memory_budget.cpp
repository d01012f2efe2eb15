#include "runtime/memory_budget.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>

#include "model/hparams.h"
#include "util/byte_size.h"
#include "util/error.h"

namespace k3::runtime {

namespace {

std::string_view trimmed(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::optional<std::string> read_small_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The smallest limit set on `path` or any of its ancestors under `root`: limits nest.
std::optional<uint64_t> hierarchy_limit(const std::string& root, std::string path, const std::string& file) {
    std::optional<uint64_t> tightest;
    for (;;) {
        if (const auto text = read_small_file(root + path + (path.ends_with('/') ? "" : "/") + file))
            if (const auto limit = parse_cgroup_limit(*text)) tightest = std::min(tightest.value_or(*limit), *limit);
        if (path.empty() || path == "/") break;
        const auto slash = path.find_last_of('/');
        path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
    return tightest;
}

}  // namespace

std::optional<uint64_t> parse_cgroup_limit(std::string_view contents) {
    const std::string_view text = trimmed(contents);
    if (text == "max") return std::nullopt;
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    if (value >= (uint64_t(1) << 60)) return std::nullopt;
    return value;
}

CgroupPaths parse_proc_cgroup(std::string_view contents) {
    CgroupPaths paths;
    std::istringstream lines{std::string(contents)};
    std::string line;
    while (std::getline(lines, line)) {
        // hierarchy-ID:controller-list:cgroup-path
        const auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string id = line.substr(0, first), controllers = line.substr(first + 1, second - first - 1);
        const std::string path = line.substr(second + 1);
        if (id == "0" && controllers.empty()) {
            paths.v2 = path;
            continue;
        }
        std::istringstream list(controllers);
        std::string controller;
        while (std::getline(list, controller, ','))
            if (controller == "memory") paths.v1 = path;
    }
    return paths;
}

std::optional<uint64_t> parse_mem_available(std::string_view meminfo) {
    std::istringstream lines{std::string(meminfo)};
    std::string line;
    while (std::getline(lines, line)) {
        if (!line.starts_with("MemAvailable:")) continue;
        std::istringstream fields(line.substr(13));
        uint64_t kib = 0;
        std::string unit;
        if (fields >> kib >> unit && unit == "kB") return kib * 1024;
    }
    return std::nullopt;
}

std::optional<MemoryLimit> detect_memory_limit() {
    std::optional<MemoryLimit> limit;
    auto consider = [&](std::optional<uint64_t> bytes, const char* source) {
        if (bytes && (!limit || *bytes < limit->bytes)) limit = MemoryLimit{*bytes, source};
    };
    if (const auto text = read_small_file("/proc/self/cgroup")) {
        const CgroupPaths paths = parse_proc_cgroup(*text);
        if (paths.v2) consider(hierarchy_limit("/sys/fs/cgroup", *paths.v2, "memory.max"), "cgroup limit");
        if (paths.v1) consider(hierarchy_limit("/sys/fs/cgroup/memory", *paths.v1, "memory.limit_in_bytes"), "cgroup limit");
    }
    if (const auto text = read_small_file("/proc/meminfo")) consider(parse_mem_available(*text), "available memory");
    return limit;
}

uint64_t budget_from_limit(uint64_t limit_bytes) {
    const uint64_t margin = std::max(limit_bytes / 20, uint64_t(64) << 20);
    return limit_bytes > margin ? limit_bytes - margin : 0;
}

uint64_t estimate_working_bytes(const model::HParams& hp, int n_ranks) {
    const uint64_t f = sizeof(float), N = uint64_t(n_ranks);
    // A rank's share of a width split across the ranks (model/shard.h: heads, FFN rows), or all
    // of it when there are fewer than one per rank.
    const auto share = [&](uint64_t units, uint64_t unit_width) {
        return (units >= N ? (units + N - 1) / N : units) * unit_width;
    };
    const uint64_t E = uint64_t(hp.n_embd), X = uint64_t(hp.n_expert), used = uint64_t(hp.n_expert_used);
    const uint64_t Ls = uint64_t(hp.expert_latent > 0 ? hp.expert_latent : hp.n_embd);
    uint64_t widest = std::max(share(uint64_t(hp.expert_ff * std::max<int64_t>(hp.n_expert_shared, 1)), 1),
                               uint64_t(hp.kda_head_dim));
    for (int64_t ff : hp.n_ff) widest = std::max(widest, share(uint64_t(ff), 1));
    uint64_t states = 0, widest_heads = 0;
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const uint64_t H = uint64_t(hp.n_head[size_t(il)]);
        widest_heads = std::max(widest_heads, share(H, uint64_t(std::max(hp.kda_head_dim, hp.key_length_mla))));
        if (hp.is_mla(il)) states += 4096 * uint64_t(hp.kv_lora_rank + hp.rope_dim) * f;  // latent cache, whole
        else states += share(H, uint64_t(hp.kda_head_dim * hp.kda_head_dim) + 3 * uint64_t(hp.kda_head_dim * (hp.conv_kernel - 1))) * f;  // recurrent + conv state
    }
    // Per token of a batch: the residual stream and its banked snapshots, attention and FFN
    // intermediates, routing and each used expert's output.
    const uint64_t banked = hp.attn_res_block_size > 0 ? uint64_t(hp.n_layer / hp.attn_res_block_size + 1) : 0;
    const uint64_t per_token = ((6 + banked) * E + 8 * widest_heads + 3 * widest + X + (used + 2) * Ls) * f;
    return (uint64_t(64) << 20) + states + 512 * per_token + 64 * uint64_t(hp.n_vocab) * f;
}

BudgetSplit split_budget(const std::string& label, uint64_t budget, uint64_t trunk, uint64_t working, uint64_t largest_expert) {
    const uint64_t least = trunk + working + 2 * largest_expert;
    if (budget < least) {
        using util::format_byte_size;
        throw Error(label + " " + format_byte_size(budget) + " is below the " + format_byte_size(least) +
                    " this model needs: " + format_byte_size(trunk) + " for the trunk (non-expert tensors) + " +
                    format_byte_size(working) + " working memory + 2 x " + format_byte_size(largest_expert) +
                    " (the largest expert, twice)");
    }
    return BudgetSplit{budget, trunk, working, largest_expert, budget - trunk - working};
}

}  // namespace k3::runtime
