// Rank r of N's share of a model in a parallel job (issue #17). Each KDA and MLA layer keeps only
// its share of the heads: their rows of the per-head projections (q, k, v, decay gate, beta,
// output gate; MLA's q_b, k_b, v_b), their conv taps and biases. The heads then compute on their
// rank alone, so a KDA layer's recurrent state lives there, and their outputs are gathered before
// the output projection (project_heads in model/context.h). Every other product is split by rows
// across the ranks (ForwardContext::linear); the small low-rank inputs shared by all heads
// (KDA's f_a, MLA's q_a and kv_a, hence the MLA latent cache) and the router stay whole on every
// rank; routed experts are divided among the ranks (MoeWeights::expert_rank, assign_experts). A
// layer with fewer heads than ranks stays whole. Every value is what one process computes, bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/hparams.h"
#include "model/weights.h"

namespace k3::model {

// The rank that runs each of a layer's n_expert routed experts. Without `loads` (or when they are
// all zero): contiguous id ranges (parallel::share_of). With each expert's measured load (the
// routing statistics of --expert-stats): the heaviest first, each to the least-loaded rank that
// holds fewer than ceil(n_expert / size) experts, ties to the lower rank, so each rank keeps about
// its share of the experts' memory and of the tokens' expert work. Deterministic: every rank
// derives the same assignment from the same loads.
std::vector<int32_t> assign_experts(int64_t n_expert, int size, std::span<const double> loads = {});

// expert_loads: [n_layer][n_expert] measured loads, or empty (model/shard.h's assign_experts).
void shard_weights(ModelWeights& weights, const HParams& hp, int rank, int size,
                   std::span<const double> expert_loads = {});

}  // namespace k3::model
