#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "kernels/dot.h"
#include "kernels/vector_ops.h"
#include "model/expert_source.h"
#include "model/situ.h"

namespace k3::model {

namespace {

// route_token into `r`, with `probs`, `selection` and `order` as its working buffers (kept by the
// caller so that routing a batch does not allocate per token).
void route_token_into(const HParams& hp, const float* logits, const std::vector<float>& selection_bias,
                      std::vector<float>& probs, std::vector<float>& selection, std::vector<int32_t>& order, Routing& r) {
    const int64_t X = hp.n_expert;
    // 2. gate probabilities s (sigmoid for K3)
    probs.assign(logits, logits + X);
    switch (hp.gating) {
        case GatingFunction::sigmoid: kernels::sigmoid(probs.data(), X, probs.data()); break;
        case GatingFunction::softmax: kernels::softmax(probs.data(), X); break;
        case GatingFunction::sqrt_softplus:
            for (float& p : probs) p = std::sqrt(p > 20.0f ? p : std::log1p(std::exp(p)));
            break;
    }
    // 3-4. choose the top n_used by s + bias (bias only for choosing); lower id wins ties
    selection.assign(probs.begin(), probs.end());
    if (!selection_bias.empty())
        for (int64_t e = 0; e < X; ++e) selection[size_t(e)] += selection_bias[size_t(e)];
    order.resize(static_cast<size_t>(X));
    std::iota(order.begin(), order.end(), 0);
    const auto n_used = hp.n_expert_used;
    std::partial_sort(order.begin(), order.begin() + n_used, order.end(), [&](int32_t a, int32_t b) {
        return selection[size_t(a)] > selection[size_t(b)] || (selection[size_t(a)] == selection[size_t(b)] && a < b);
    });
    r.experts.assign(order.begin(), order.begin() + n_used);
    // 5. weights are the unbiased probabilities
    r.weights.clear();
    for (int32_t e : r.experts) r.weights.push_back(probs[size_t(e)]);
    // 6. renormalize (llama.cpp clamps the denominator)
    if (hp.expert_weights_norm) {
        const float sum = std::accumulate(r.weights.begin(), r.weights.end(), 0.0f);
        const float denominator = std::max(sum, 6.103515625e-5f);
        for (float& w : r.weights) w /= denominator;
    }
    // 7. scale
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
        for (float& w : r.weights) w *= hp.expert_weights_scale;
}

}  // namespace

Routing route_token(const HParams& hp, const float* logits, const std::vector<float>& selection_bias) {
    std::vector<float> probs, selection;
    std::vector<int32_t> order;
    Routing r;
    route_token_into(hp, logits, selection_bias, probs, selection, order, r);
    return r;
}

void MoeScratch::reserve(const HParams& hp, int64_t n_tokens) {
    const size_t n = size_t(n_tokens), X = size_t(hp.n_expert), used = size_t(hp.n_expert_used);
    const size_t E = size_t(hp.n_embd), Ls = size_t(hp.expert_latent > 0 ? hp.expert_latent : hp.n_embd);
    const size_t Fe = size_t(hp.expert_ff), members = n * used;
    logits.reserve(n * X);
    probs.reserve(X);
    selection.reserve(X);
    order.reserve(X);
    latent.reserve(n * Ls);
    shared.reserve(n * E);
    shared_gate.reserve(n * size_t(hp.n_expert_shared) * Fe);  // the shared experts' width
    shared_up.reserve(n * size_t(hp.n_expert_shared) * Fe);
    inputs.reserve(members * Ls);
    gate.reserve(members * Fe);
    up.reserve(members * Fe);
    expert_out.reserve(members * Ls);
    mixed.reserve(n * Ls);
    needed.reserve(X);
    token_counts.reserve(X);
    owned.reserve(X);
    owned_counts.reserve(X);
    first_member.reserve(X + 1);
    next_member.reserve(X);
    member_token.reserve(members);
    member_weight.reserve(members);
    products.reserve(3 * X);
    groups.reserve(2 * X);
    if (routes.size() < n) routes.resize(n);
    for (Routing& r : routes) {
        r.experts.reserve(used);
        r.weights.reserve(used);
    }
}

void moe_forward(const ForwardContext& ctx, const MoeWeights& w, int64_t il, const float* y, int64_t n, float* out) {
    const HParams& hp = ctx.hp;
    const int64_t E = hp.n_embd, X = hp.n_expert, Ls = w.expert_io, Fe = w.expert_width;
    MoeScratch& s = ctx.moe;

    // 1. router logits on the full-width input, f32: [n][X] (in a parallel job every rank routes alone)
    s.logits.resize(size_t(n * X));
    ctx.unsharded().linear(w.router, y, n, s.logits.data());
    ctx.emit(layer_name(il, "ffn_moe_logits"), s.logits.data(), n, X);
    if (s.routes.size() < size_t(n)) s.routes.resize(size_t(n));
    for (int64_t t = 0; t < n; ++t)
        route_token_into(hp, s.logits.data() + t * X, w.selection_bias, s.probs, s.selection, s.order, s.routes[size_t(t)]);

    // Tokens grouped by expert, in token order (a counting sort): expert e's members are
    // [first_member[e], first_member[e + 1]) of member_token / member_weight, so each expert runs once.
    s.first_member.assign(size_t(X + 1), 0);
    for (int64_t t = 0; t < n; ++t)
        for (int32_t e : s.routes[size_t(t)].experts) ++s.first_member[size_t(e) + 1];
    for (int64_t e = 0; e < X; ++e) s.first_member[size_t(e + 1)] += s.first_member[size_t(e)];
    const int64_t n_members = s.first_member[size_t(X)];
    s.member_token.resize(size_t(n_members));
    s.member_weight.resize(size_t(n_members));
    s.next_member.assign(s.first_member.begin(), s.first_member.end() - 1);
    for (int64_t t = 0; t < n; ++t) {
        const Routing& route = s.routes[size_t(t)];
        for (size_t k = 0; k < route.experts.size(); ++k) {
            const int64_t slot = s.next_member[size_t(route.experts[k])]++;
            s.member_token[size_t(slot)] = t;
            s.member_weight[size_t(slot)] = route.weights[k];
        }
    }
    // Announced first, so that reads of non-resident experts overlap the work below.
    s.needed.clear();
    s.token_counts.clear();
    for (int64_t e = 0; e < X; ++e)
        if (const int64_t count = s.first_member[size_t(e + 1)] - s.first_member[size_t(e)]; count > 0) {
            s.needed.push_back(int32_t(e));
            s.token_counts.push_back(count);
        }
    // Expert parallel: this rank runs only the experts expert_rank gives it (every expert when alone).
    s.owned.clear();
    s.owned_counts.clear();
    const int rank = ctx.collective ? ctx.collective->rank() : 0;
    for (size_t i = 0; i < s.needed.size(); ++i)
        if (w.expert_rank.empty() || w.expert_rank[size_t(s.needed[i])] == rank) {
            s.owned.push_back(s.needed[i]);
            s.owned_counts.push_back(s.token_counts[i]);
        }
    ExpertSource& source = *ctx.experts;
    source.routed(il, s.needed, s.token_counts);
    source.request(il, s.owned, s.owned_counts);

    // 8. latent input z = W_routed_down · y: [n][Ls]; 13. the shared experts' gate and up of y
    // (one pass over y: in a parallel job, one collective)
    kernels::MatmulOutput of_y[3];
    size_t n_of_y = 0;
    const float* z = y;
    if (w.routed_down) {
        s.latent.resize(size_t(n * Ls));
        of_y[n_of_y++] = {&*w.routed_down, s.latent.data(), w.routed_down->rows};
        z = s.latent.data();
    }
    const int64_t Fs = w.shared ? w.shared->gate.rows : 0;
    s.shared.resize(w.shared ? size_t(n * E) : 0);
    s.shared_gate.resize(size_t(n * Fs));
    s.shared_up.resize(size_t(n * Fs));
    if (w.shared) {
        of_y[n_of_y++] = {&w.shared->gate, s.shared_gate.data(), Fs};
        of_y[n_of_y++] = {&w.shared->up, s.shared_up.data(), Fs};
    }
    if (n_of_y > 0) ctx.linear_same_input(std::span(of_y, n_of_y), y, n);
    // situ(g, u), then the shared experts' down projection: [n][E] (in a parallel job it travels
    // with the routed experts' outputs; alone, in the first pass of the routed experts' gate and
    // up, a hand-off fewer: alone, this rank runs every routed expert, so that pass exists)
    const kernels::MatmulOutput shared_down{w.shared ? &w.shared->down : nullptr, s.shared.data(), E};
    bool shared_down_due = false;
    if (w.shared) {
        situ_in_place(ctx, s.shared_gate.data(), s.shared_up.data(), n * Fs);
        ctx.observed(w.shared->down, s.shared_gate.data(), Fs, n);
        shared_down_due = !ctx.collective;
    }

    // 9. each expert's W_down_e · situ(W_gate_e · z, W_up_e · z) for its tokens, in arrival order:
    // expert e's outputs at expert_out rows [first_member[e], first_member[e + 1]), each [Ls].
    // The experts resident together go through one parallel pass for every gate and up, then
    // one for every down, so that both threads stream weights the whole step.
    s.expert_out.resize(size_t(n_members * Ls));
    // An expert's rows all live on its rank. The observer sees them as rows of the mapped file
    // wherever the source keeps the expert (an expert cache's buffer under a memory budget).
    const ForwardContext expert_ctx = ctx.unsharded();
    for (std::span<const ExpertMatrices> batch; !(batch = source.take_resident()).empty();) {
        int64_t batch_rows = 0;
        for (const ExpertMatrices& expert : batch)
            batch_rows += s.first_member[size_t(expert.expert) + 1] - s.first_member[size_t(expert.expert)];
        if (ctx.observe) s.inputs.resize(size_t(batch_rows * Ls));
        s.gate.resize(size_t(batch_rows * Fe));
        s.up.resize(size_t(batch_rows * Fe));
        s.products.clear();
        s.groups.clear();
        int64_t row = 0;  // the expert's first row of gate and up
        for (const ExpertMatrices& expert : batch) {
            const int64_t first = s.first_member[size_t(expert.expert)];
            const int64_t m = s.first_member[size_t(expert.expert) + 1] - first;
            // Several tokens: the expert picks their rows of z, each rounded once however many
            // experts pick it; a single token's row is read in place (decode: every expert reads
            // the one row, so it is rounded once).
            const int64_t* rows = m > 1 ? s.member_token.data() + first : nullptr;
            const float* x = rows ? z : z + s.member_token[size_t(first)] * Ls;
            if (ctx.observe) {
                const float* seen = x;  // the observer reads the rows contiguous
                if (rows) {
                    for (int64_t i = 0; i < m; ++i) std::copy(z + rows[i] * Ls, z + (rows[i] + 1) * Ls, s.inputs.begin() + i * Ls);
                    seen = s.inputs.data();
                }
                const ExpertMatrices in_file = mapped_expert(w, expert.expert);
                ctx.observed(in_file.gate, seen, Ls, m);
                ctx.observed(in_file.up, seen, Ls, m);
            }
            s.products.push_back({&expert.gate, s.gate.data() + row * Fe, Fe});
            s.products.push_back({&expert.up, s.up.data() + row * Fe, Fe});
            s.groups.push_back({std::span(s.products).last(2), x, Ls, m, rows});
            row += m;
        }
        if (shared_down_due) s.groups.push_back({std::span(&shared_down, 1), s.shared_gate.data(), Fs, n});
        shared_down_due = false;
        expert_ctx.linear_groups(s.groups);
        situ_in_place(ctx, s.gate.data(), s.up.data(), batch_rows * Fe);
        s.groups.clear();
        row = 0;
        for (const ExpertMatrices& expert : batch) {
            const int64_t first = s.first_member[size_t(expert.expert)];
            const int64_t m = s.first_member[size_t(expert.expert) + 1] - first;
            if (ctx.observe) ctx.observed(mapped_expert(w, expert.expert).down, s.gate.data() + row * Fe, Fe, m);
            s.products.push_back({&expert.down, s.expert_out.data() + first * Ls, Ls});
            s.groups.push_back({std::span(s.products).last(1), s.gate.data() + row * Fe, Fe, m});
            row += m;
        }
        expert_ctx.linear_groups(s.groups);
        for (const ExpertMatrices& expert : batch) source.release(expert.expert);
    }
    if (ctx.collective)
        gather_expert_outputs(ctx, w.expert_rank, s.first_member, Ls, s.expert_out,
                              w.shared ? std::span(&shared_down, 1) : std::span<const kernels::MatmulOutput>(),
                              s.shared_gate.data(), n);
    if (w.shared) ctx.emit(layer_name(il, "ffn_shexp"), s.shared.data(), n, E);
    // 10. m = sum_k w_k · expert output, summed in expert-id order whatever the arrival order
    // (the same float additions with or without a memory budget): [n][Ls]
    // (in pieces of columns, each summed in that order)
    s.mixed.assign(size_t(n * Ls), 0.0f);
    ctx.for_each_piece(Ls, n_members, [&](int64_t d0, int64_t d1) {
        for (int32_t e : s.needed)
            for (int64_t i = s.first_member[size_t(e)]; i < s.first_member[size_t(e) + 1]; ++i) {
                const float* src = s.expert_out.data() + i * Ls;
                float* dst = s.mixed.data() + s.member_token[size_t(i)] * Ls;
                kernels::axpy_f32(s.member_weight[size_t(i)], src + d0, dst + d0, d1 - d0);
            }
    });
    ctx.emit(layer_name(il, "ffn_moe_out"), s.mixed.data(), n, Ls);
    // 11. routed norm
    if (!w.routed_norm.empty())
        ctx.for_each_piece(n, Ls, [&](int64_t first, int64_t last) {
            for (int64_t t = first; t < last; ++t)
                kernels::rms_norm(s.mixed.data() + t * Ls, w.routed_norm.data(), hp.rms_eps, Ls, s.mixed.data() + t * Ls);
        });
    // 12. back to full width
    if (w.routed_up) ctx.linear(*w.routed_up, s.mixed.data(), n, out);
    else std::copy(s.mixed.begin(), s.mixed.end(), out);
    // 14. f = m + sh
    ctx.for_each_piece(int64_t(s.shared.size()), 1, [&](int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) out[i] += s.shared[size_t(i)];
    });
}

}  // namespace k3::model
