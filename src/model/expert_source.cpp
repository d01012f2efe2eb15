#include "model/expert_source.h"

#include "model/weights.h"

namespace k3::model {

ExpertMatrices mapped_expert(const MoeWeights& w, int32_t e) {
    const int64_t Fe = w.expert_width, Ls = w.expert_io;
    return ExpertMatrices{e, w.gate_exps.row_range(e * Fe, Fe), w.up_exps.row_range(e * Fe, Fe),
                          w.down_exps.row_range(e * Ls, Ls)};
}

void MappedExperts::request(int64_t il, std::span<const int32_t> experts, std::span<const int64_t>) {
    layer_ = il;
    pending_.assign(experts.begin(), experts.end());
    next_ = 0;
}

std::optional<ExpertMatrices> MappedExperts::next() {
    if (next_ == pending_.size()) return std::nullopt;
    return mapped_expert(*weights_.layers[size_t(layer_)].moe, pending_[next_++]);
}

}  // namespace k3::model
