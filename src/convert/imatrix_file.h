// Importance matrices in llama.cpp's file formats (tools/imatrix, common/imatrix-loader at
// 34af94cd9), so that files move between k3 and llama-imatrix / llama-quantize both ways:
// * GGUF (the default): general.type = "imatrix", imatrix.datasets (strings),
//   imatrix.chunk_count and imatrix.chunk_size (u32); per weight NAME, in name order, the f32
//   tensors NAME.in_sum2 [ne0, n_mat] (the sums of squared activations per input column, one
//   row per matrix: per expert for 3-D expert tensors) and NAME.counts [1, n_mat] (tokens seen).
// * legacy .dat (read only): i32 n_entries; per entry i32 name length, the name, i32 ncall,
//   i32 nval, nval f32 (mean × ncall); then optionally i32 chunk count, i32 length, dataset name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace k3::convert {

struct ImatrixEntry {
    std::vector<float> sums;      // n_mat × ne0, matrix-major
    std::vector<int64_t> counts;  // n_mat (legacy files: one, ncall)
};

struct ImportanceMatrix {
    std::map<std::string, ImatrixEntry> entries;  // by weight name ("blk.0.ffn_down_exps.weight")
    std::vector<std::string> datasets;
    uint32_t chunk_count = 0;
    uint32_t chunk_size = 0;
    bool legacy = false;  // read from a .dat file: sums are means × ncall
};

// Reads either format (GGUF by its magic). Throws k3::Error naming the file and what is wrong
// (a truncated file, a sums tensor without counts, sizes that do not divide, non-f32 data).
ImportanceMatrix read_imatrix(const std::string& path);

// Writes the GGUF format (entries with no counts are skipped).
void write_imatrix(const std::string& path, const ImportanceMatrix& imatrix);

// The per-column weights llama-quantize gives the quantiser for one entry: the mean of the
// squared activations of each matrix (sums / count; 1 for a matrix that saw no tokens), or for
// a legacy file the stored values / ncall. n_mat × ne0 values.
std::vector<float> importance_weights(const ImatrixEntry& entry, bool legacy);

}  // namespace k3::convert
