// The look-up tables of ggml's IQ quantisation search, built once on first use (thread-safe):
// for one codebook, which grid point a vector of levels is, and for a vector that is not on the
// grid the grid points nearest to it. The quantisers (iq_grid_quantize.cpp) round each group of
// values to levels, and where that misses the grid pick the best of these neighbours.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace k3::tensor {

class GridSearchTable {
public:
    // codes: the grid as level codes (iq_grids.h), group values per point, bits per level.
    // Neighbours are the points within the n_distances smallest squared distances, nearest first
    // and by index on ties (ggml's sort by (distance, index)).
    GridSearchTable(std::span<const uint16_t> codes, int group, int bits, int max_level, int n_distances);

    int group() const { return group_; }
    int size() const { return int(levels_.size()) / group_; }
    // The levels of grid point i (group values).
    const int8_t* levels(int i) const { return levels_.data() + size_t(i) * group_; }
    // The level code of group levels L (each below max_level).
    unsigned code_of(const int8_t* L) const;
    // The grid point whose levels are `code`, or -1.
    int index_of(unsigned code) const { return map_[code] >= 0 ? map_[code] : -1; }
    // The nearest grid points of a code not on the grid.
    std::span<const uint16_t> neighbours(unsigned code) const;

private:
    int group_, bits_;
    std::vector<int8_t> levels_;
    std::vector<int32_t> map_;  // >= 0: grid index; < 0: −(offset + 1) of its count in neighbours_
    std::vector<uint16_t> neighbours_;
};

// The tables of each codebook, with ggml's neighbour counts.
const GridSearchTable& iq2xxs_search_table();
const GridSearchTable& iq2xs_search_table();
const GridSearchTable& iq2s_search_table();
const GridSearchTable& iq3xxs_search_table();
const GridSearchTable& iq3s_search_table();
const GridSearchTable& iq1s_search_table();

}  // namespace k3::tensor
