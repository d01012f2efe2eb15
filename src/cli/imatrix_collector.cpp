#include "cli/imatrix_collector.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace k3::cli {

ImatrixCollector::ImatrixCollector(std::span<const gguf::TensorInfo> tensors) {
    for (const gguf::TensorInfo& t : tensors) {
        if (t.name.rfind("blk.", 0) != 0 || t.ne.size() < 2) continue;
        const int64_t n_mat = t.ne.size() > 2 ? t.ne[2] : 1;
        matrices_.push_back({&t, t.n_bytes / uint64_t(n_mat), t.name.find("_exps.") != std::string::npos});
    }
    std::sort(matrices_.begin(), matrices_.end(),
              [](const Matrix& a, const Matrix& b) { return a.tensor->data < b.tensor->data; });
}

void ImatrixCollector::observe(const kernels::MatrixView& w, const float* x, int64_t x_stride, int64_t n) {
    // The tensor whose bytes hold w (the last one starting at or before it).
    auto it = std::upper_bound(matrices_.begin(), matrices_.end(), w.data,
                               [](const uint8_t* p, const Matrix& m) { return p < m.tensor->data; });
    if (it == matrices_.begin()) return;
    const Matrix& m = *--it;
    const gguf::TensorInfo& t = *m.tensor;
    if (w.data >= t.data + t.n_bytes || w.cols != t.ne[0]) return;  // not a layer weight (or a part of one)
    const int64_t ne0 = t.ne[0], n_mat = t.ne.size() > 2 ? t.ne[2] : 1;
    const int64_t index = int64_t(uint64_t(w.data - t.data) / m.matrix_bytes);

    std::lock_guard lock(mutex_);
    convert::ImatrixEntry& e = entries_[t.name];
    if (e.sums.empty()) {
        e.sums.assign(size_t(ne0 * n_mat), 0.f);
        e.counts.assign(m.per_matrix_counts ? size_t(n_mat) : 1, 0);
    }
    float* sums = e.sums.data() + index * ne0;
    for (int64_t r = 0; r < n; ++r) {
        const float* row = x + r * x_stride;
        for (int64_t c = 0; c < ne0; ++c) sums[c] += row[c] * row[c];
    }
    for (int64_t c = 0; c < ne0; ++c)
        if (!std::isfinite(sums[c])) throw Error("non-finite activations entering " + t.name);
    // One count per token: per expert for routed experts, once (at the first matrix) otherwise.
    if (m.per_matrix_counts)
        e.counts[size_t(index)] += n;
    else if (index == 0)
        e.counts[0] += n;
}

convert::ImportanceMatrix ImatrixCollector::result(std::vector<std::string> datasets, uint32_t chunk_count,
                                                   uint32_t chunk_size) const {
    convert::ImportanceMatrix imatrix;
    imatrix.entries = entries_;
    imatrix.datasets = std::move(datasets);
    imatrix.chunk_count = chunk_count;
    imatrix.chunk_size = chunk_size;
    return imatrix;
}

}  // namespace k3::cli
