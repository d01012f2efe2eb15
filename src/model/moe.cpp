#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "kernels/vector_ops.h"
#include "model/expert_source.h"
#include "model/situ.h"

namespace k3::model {

Routing route_token(const HParams& hp, const float* logits, const std::vector<float>& selection_bias) {
    const int64_t X = hp.n_expert;
    // 2. gate probabilities s (sigmoid for K3)
    std::vector<float> probs(logits, logits + X);
    switch (hp.gating) {
        case GatingFunction::sigmoid: kernels::sigmoid(probs.data(), X, probs.data()); break;
        case GatingFunction::softmax: kernels::softmax(probs.data(), X); break;
        case GatingFunction::sqrt_softplus:
            for (float& p : probs) p = std::sqrt(p > 20.0f ? p : std::log1p(std::exp(p)));
            break;
    }
    // 3-4. choose the top n_used by s + bias (bias only for choosing); lower id wins ties
    std::vector<float> selection(probs);
    if (!selection_bias.empty())
        for (int64_t e = 0; e < X; ++e) selection[size_t(e)] += selection_bias[size_t(e)];
    std::vector<int32_t> order(static_cast<size_t>(X));
    std::iota(order.begin(), order.end(), 0);
    const auto n_used = hp.n_expert_used;
    std::partial_sort(order.begin(), order.begin() + n_used, order.end(), [&](int32_t a, int32_t b) {
        return selection[size_t(a)] > selection[size_t(b)] || (selection[size_t(a)] == selection[size_t(b)] && a < b);
    });
    Routing r;
    r.experts.assign(order.begin(), order.begin() + n_used);
    // 5. weights are the unbiased probabilities
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
    return r;
}

void moe_forward(const ForwardContext& ctx, const MoeWeights& w, int64_t il, const float* y, int64_t n, float* out) {
    const HParams& hp = ctx.hp;
    const int64_t E = hp.n_embd, X = hp.n_expert, Ls = w.expert_io, Fe = w.expert_width;

    // 1. router logits on the full-width input, f32: [n][X]
    std::vector<float> logits(size_t(n * X));
    ctx.linear(w.router, y, n, logits.data());
    std::vector<Routing> routes(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) routes[size_t(t)] = route_token(hp, logits.data() + t * X, w.selection_bias);

    // Tokens grouped by expert: (token, weight) per expert, so each expert runs once.
    std::vector<std::vector<std::pair<int64_t, float>>> by_expert(static_cast<size_t>(X));
    for (int64_t t = 0; t < n; ++t)
        for (size_t k = 0; k < routes[size_t(t)].experts.size(); ++k)
            by_expert[size_t(routes[size_t(t)].experts[k])].emplace_back(t, routes[size_t(t)].weights[k]);
    // Announced first, so that reads of non-resident experts overlap the work below.
    std::vector<int32_t> needed;
    std::vector<int64_t> token_counts;
    for (int64_t e = 0; e < X; ++e)
        if (!by_expert[size_t(e)].empty()) {
            needed.push_back(int32_t(e));
            token_counts.push_back(int64_t(by_expert[size_t(e)].size()));
        }
    ExpertSource& source = *ctx.experts;
    source.request(il, needed, token_counts);

    // 8. latent input z = W_routed_down · y: [n][Ls]
    std::vector<float> latent;
    const float* z = y;
    if (w.routed_down) {
        latent.resize(size_t(n * Ls));
        ctx.linear(*w.routed_down, y, n, latent.data());
        z = latent.data();
    }
    // 13. shared experts read y: [n][E]
    std::vector<float> shared;
    if (w.shared) {
        shared.resize(size_t(n * E));
        situ_glu(ctx, *w.shared, y, n, shared.data());
    }

    // 9. each expert's W_down_e · situ(W_gate_e · z, W_up_e · z) for its tokens, in arrival order:
    // expert_out[e]: [members][Ls]
    std::vector<std::vector<float>> expert_out(static_cast<size_t>(X));
    std::vector<float> inputs, gate, up;
    while (const std::optional<ExpertMatrices> expert = source.next()) {
        const auto& members = by_expert[size_t(expert->expert)];
        const int64_t m = int64_t(members.size());
        inputs.resize(size_t(m * Ls));
        for (int64_t i = 0; i < m; ++i)
            std::copy(z + members[size_t(i)].first * Ls, z + (members[size_t(i)].first + 1) * Ls, inputs.begin() + i * Ls);
        gate.resize(size_t(m * Fe));
        up.resize(size_t(m * Fe));
        std::vector<float>& result = expert_out[size_t(expert->expert)];
        result.resize(size_t(m * Ls));
        ctx.linear_pair(expert->gate, expert->up, inputs.data(), m, gate.data(), up.data());
        kernels::situ(gate.data(), up.data(), hp.situ_beta, hp.situ_linear_beta, m * Fe, gate.data());
        ctx.linear(expert->down, gate.data(), m, result.data());
        source.release(expert->expert);
    }
    // 10. m = sum_k w_k · expert output, summed in expert-id order whatever the arrival order
    // (the same float additions with or without a memory budget): [n][Ls]
    std::vector<float> mixed(size_t(n * Ls), 0.0f);
    for (int32_t e : needed) {
        const auto& members = by_expert[size_t(e)];
        for (size_t i = 0; i < members.size(); ++i) {
            const float* src = expert_out[size_t(e)].data() + i * size_t(Ls);
            float* dst = mixed.data() + members[i].first * Ls;
            const float weight = members[i].second;
            for (int64_t d = 0; d < Ls; ++d) dst[d] += weight * src[d];
        }
    }
    // 11. routed norm
    if (!w.routed_norm.empty())
        for (int64_t t = 0; t < n; ++t)
            kernels::rms_norm(mixed.data() + t * Ls, w.routed_norm.data(), hp.rms_eps, Ls, mixed.data() + t * Ls);
    ctx.emit(layer_name(il, "ffn_moe_routed"), mixed.data(), n, Ls);
    // 12. back to full width
    if (w.routed_up) ctx.linear(*w.routed_up, mixed.data(), n, out);
    else std::copy(mixed.begin(), mixed.end(), out);
    // 14. f = m + sh
    for (size_t i = 0; i < shared.size(); ++i) out[i] += shared[i];
}

}  // namespace k3::model
