#include "tensor/iq_grid_search.h"

#include <climits>

#include "tensor/iq_grids.h"

namespace k3::tensor {

GridSearchTable::GridSearchTable(std::span<const uint16_t> codes, int group, int bits, int max_level,
                                 int n_distances)
    : group_(group), bits_(bits), levels_(codes.size() * size_t(group)), map_(size_t(1) << (bits * group), 0) {
    const unsigned level_mask = (1u << bits) - 1;
    for (size_t i = 0; i < codes.size(); ++i)
        for (int j = 0; j < group; ++j) levels_[i * group + j] = int8_t((codes[i] >> (bits * j)) & level_mask);
    constexpr int32_t kUnreachable = INT32_MIN;  // a code with a level the search never rounds to
    for (unsigned code = 0; code < map_.size(); ++code)
        for (int j = 0; j < group; ++j)
            if (int((code >> (bits * j)) & level_mask) >= max_level) map_[code] = kUnreachable;
    std::vector<bool> on_grid(map_.size(), false);
    for (size_t i = 0; i < codes.size(); ++i) {
        map_[codes[i]] = int32_t(i);
        on_grid[codes[i]] = true;
    }

    // Squared distances between level vectors are small integers: bucket the points by distance
    // in index order, which is ggml's (distance, index) order.
    const int max_distance = group * (max_level - 1) * (max_level - 1);
    std::vector<std::vector<uint16_t>> by_distance(size_t(max_distance) + 1);
    for (unsigned code = 0; code < map_.size(); ++code) {
        if (on_grid[code] || map_[code] == kUnreachable) continue;
        for (auto& bucket : by_distance) bucket.clear();
        for (int i = 0; i < size(); ++i) {
            int d2 = 0;
            for (int j = 0; j < group; ++j) {
                const int diff = levels(i)[j] - int((code >> (bits * j)) & level_mask);
                d2 += diff * diff;
            }
            by_distance[d2].push_back(uint16_t(i));
        }
        const size_t count_at = neighbours_.size();
        neighbours_.push_back(0);
        int taken = 0;
        for (const auto& bucket : by_distance) {
            if (bucket.empty()) continue;
            neighbours_.insert(neighbours_.end(), bucket.begin(), bucket.end());
            if (++taken == n_distances) break;
        }
        neighbours_[count_at] = uint16_t(neighbours_.size() - count_at - 1);
        map_[code] = -int32_t(count_at) - 1;
    }
}

unsigned GridSearchTable::code_of(const int8_t* L) const {
    unsigned code = 0;
    for (int j = 0; j < group_; ++j) code |= unsigned(L[j]) << (bits_ * j);
    return code;
}

std::span<const uint16_t> GridSearchTable::neighbours(unsigned code) const {
    const size_t at = size_t(-(map_[code] + 1));
    return {neighbours_.data() + at + 1, neighbours_[at]};
}

// Neighbour counts (distinct distances) as ggml's iq2xs_init_impl / iq3xs_init_impl choose them.
const GridSearchTable& iq2xxs_search_table() {
    static const GridSearchTable table(kIq2xxsLevelCodes, 8, 2, 3, 2);
    return table;
}
const GridSearchTable& iq2xs_search_table() {
    static const GridSearchTable table(kIq2xsLevelCodes, 8, 2, 3, 2);
    return table;
}
const GridSearchTable& iq2s_search_table() {
    static const GridSearchTable table(kIq2sLevelCodes, 8, 2, 3, 1);
    return table;
}
const GridSearchTable& iq3xxs_search_table() {
    static const GridSearchTable table(kIq3xxsLevelCodes, 4, 3, 8, 2);
    return table;
}
const GridSearchTable& iq3s_search_table() {
    static const GridSearchTable table(kIq3sLevelCodes, 4, 3, 8, 3);
    return table;
}
const GridSearchTable& iq1s_search_table() {
    static const GridSearchTable table(kIq1sLevelCodes, 8, 2, 3, 3);
    return table;
}

}  // namespace k3::tensor
