// Rank r of N's share of a model in a parallel job (issue #17). Each KDA and MLA layer keeps only
// its share of the heads: their rows of the per-head projections (q, k, v, decay gate, beta,
// output gate; MLA's q_b, k_b, v_b), their conv taps and biases. The heads then compute on their
// rank alone, so a KDA layer's recurrent state lives there, and their outputs are gathered before
// the output projection (project_heads in model/context.h). Every other product is split by rows
// across the ranks (ForwardContext::linear); the small low-rank inputs shared by all heads
// (KDA's f_a, MLA's q_a and kv_a, hence the MLA latent cache) and the router stay whole on every
// rank; routed experts are split by id in moe_forward. A layer with fewer heads than ranks stays
// whole. Every value is what one process computes, bit for bit.
#pragma once

#include "model/hparams.h"
#include "model/weights.h"

namespace k3::model {

void shard_weights(ModelWeights& weights, const HParams& hp, int rank, int size);

}  // namespace k3::model
