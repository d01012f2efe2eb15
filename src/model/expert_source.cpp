#include "model/expert_source.h"

#include "model/weights.h"

namespace k3::model {

ExpertMatrices mapped_expert(const MoeWeights& w, int32_t e) {
    const int64_t Fe = w.expert_width, Ls = w.expert_io;
    return ExpertMatrices{e, w.gate_exps.row_range(e * Fe, Fe), w.up_exps.row_range(e * Fe, Fe),
                          w.down_exps.row_range(e * Ls, Ls)};
}

void MappedExperts::request(int64_t il, std::span<const int32_t> experts, std::span<const int64_t>) {
    const MoeWeights& w = *weights_.layers[size_t(il)].moe;
    pending_.clear();
    for (const int32_t e : experts) pending_.push_back(mapped_expert(w, e));
}

std::span<const ExpertMatrices> MappedExperts::take_resident() {
    taken_.swap(pending_);
    pending_.clear();
    return taken_;
}

}  // namespace k3::model
