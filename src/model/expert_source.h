// Where the MoE layer gets routed experts' weights from (k3-architecture.md §6.2). The layer
// announces the experts a batch needs as soon as routing is known, computes what does not need
// them, then takes every expert that is resident at once (in any order; all of them, without a
// budget), so that one parallel pass covers them all, and hands them back after their
// down-projections. Without a memory budget every expert is a row range of the mapped stacked
// tensors (MappedExperts); runtime/expert_cache streams them from disk under a budget.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/matmul.h"

namespace k3::model {

struct ModelWeights;
struct MoeWeights;

// One routed expert's matrices, pointing at resident bytes until released.
struct ExpertMatrices {
    int32_t expert = 0;
    kernels::MatrixView gate;  // Ls -> Fe
    kernels::MatrixView up;    // Ls -> Fe
    kernels::MatrixView down;  // Fe -> Ls
};

// Expert e of a layer as rows of its stacked tensors in the mapped file.
ExpertMatrices mapped_expert(const MoeWeights& w, int32_t e);

class ExpertSource {
public:
    virtual ~ExpertSource() = default;
    // Starts making layer il's `experts` (ascending, distinct) resident; token_counts[i] is how
    // many tokens of the batch route to experts[i]. Any earlier request must be fully released.
    virtual void request(int64_t il, std::span<const int32_t> experts, std::span<const int64_t> token_counts) = 0;
    // Every expert layer il's batch routes to, with its token counts, just before request(): in
    // a parallel job request() gets only this rank's experts, this all of them (on every rank).
    virtual void routed(int64_t /*il*/, std::span<const int32_t> /*experts*/, std::span<const int64_t> /*token_counts*/) {}
    // Every requested expert that is resident and not yet handed out, waiting for one if none is;
    // empty once every requested expert has been handed out. The span (the ExpertMatrices, which
    // products may point at) stays valid until the next call; each expert's bytes stay resident
    // and unchanged, whatever reads land meanwhile, until release() of that expert. Release every
    // expert of the span before the next call (the budget's room for further reads comes from
    // released experts).
    virtual std::span<const ExpertMatrices> take_resident() = 0;
    // Hands back a taken expert: its bytes may be evicted or overwritten from now on.
    virtual void release(int32_t expert) = 0;
};

// Experts as row ranges of the model's stacked tensors (the mapped file): no copies, no waiting.
class MappedExperts final : public ExpertSource {
public:
    explicit MappedExperts(const ModelWeights& weights) : weights_(weights) {}
    void request(int64_t il, std::span<const int32_t> experts, std::span<const int64_t> token_counts) override;
    std::span<const ExpertMatrices> take_resident() override;
    void release(int32_t) override {}

private:
    const ModelWeights& weights_;
    std::vector<ExpertMatrices> pending_;  // handed out by the next take_resident()
    std::vector<ExpertMatrices> taken_;
};

}  // namespace k3::model
