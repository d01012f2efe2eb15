#include "model/state.h"

#include <algorithm>

namespace k3::model {

void PagedRows::append(const float* rows, int64_t n) {
    const size_t page_floats = size_t(kTokensPerPage * width_);
    for (int64_t done = 0; done < n;) {
        const int64_t in_page = n_rows_ % kTokensPerPage;
        if (in_page == 0) {
            pages_.push_back(std::make_shared<std::vector<float>>(page_floats));
        } else if (pages_.back().use_count() > 1) {
            pages_.back() = std::make_shared<std::vector<float>>(*pages_.back());  // shared: copy before writing
        }
        const int64_t take = std::min(n - done, kTokensPerPage - in_page);
        std::copy(rows + done * width_, rows + (done + take) * width_, pages_.back()->data() + in_page * width_);
        done += take;
        n_rows_ += take;
    }
}

void PagedRows::truncate(int64_t n_rows) {
    n_rows_ = std::min(n_rows_, n_rows);
    pages_.resize(size_t((n_rows_ + kTokensPerPage - 1) / kTokensPerPage));
}

KdaState& LayerState::writable_kda() {
    if (kda.use_count() > 1) kda = std::make_shared<KdaState>(*kda);
    return *kda;
}

uint64_t SequenceState::bytes() const {
    uint64_t total = 0;
    for (const LayerState& layer : layers) {
        if (layer.kda) total += (layer.kda->conv.size() + layer.kda->recurrent.size()) * sizeof(float);
        total += layer.mla.pages().size() * layer.mla.page_bytes();
    }
    return total;
}

}  // namespace k3::model
