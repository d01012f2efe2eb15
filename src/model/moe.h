// Latent mixture of experts (k3-architecture.md §6.2): a router on the full-width input picks
// experts; they run in the latent space between routed_down and routed_norm + routed_up;
// shared experts run at full width. In a batch, tokens are grouped by expert so each expert's
// weights are read once per forward pass.
#pragma once

#include <cstdint>
#include <vector>

#include "model/context.h"
#include "model/weights.h"

namespace k3::model {

// The experts chosen for one token and their mixing weights.
struct Routing {
    std::vector<int32_t> experts;  // [n_used], best first
    std::vector<float> weights;    // [n_used]
};

// Steps 2-7 of §6.2 for one token's router logits [n_expert].
Routing route_token(const HParams& hp, const float* router_logits, const std::vector<float>& selection_bias);

// The buffers of moe_forward, kept across its layer calls and passes (Model::forward keeps one
// per calling thread, ForwardContext::moe), so that no layer call allocates.
struct MoeScratch {
    // Capacity for a batch of n_tokens of a model with these hyper-parameters.
    void reserve(const HParams& hp, int64_t n_tokens);
    std::vector<float> logits, probs, selection, latent, shared, shared_gate, shared_up, inputs, gate, up, expert_out,
        mixed, member_weight;
    std::vector<int32_t> order, needed, owned;  // owned: the needed experts this rank runs
    std::vector<int64_t> token_counts, owned_counts, first_member, member_token, next_member;
    std::vector<Routing> routes;
    std::vector<kernels::MatmulOutput> products;  // a batch of experts' gate, up and down
    std::vector<kernels::MatmulGroup> groups;
};

// out[t] = FFN_moe(y[t]) for n rows; y, out: [n][E].
void moe_forward(const ForwardContext& ctx, const MoeWeights& w, int64_t il, const float* y, int64_t n, float* out);

}  // namespace k3::model
