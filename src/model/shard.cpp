#include "model/shard.h"

#include <algorithm>
#include <numeric>

#include "parallel/collective.h"

namespace k3::model {

namespace {

using parallel::Range;

template <class T>
std::vector<T> slice(const std::vector<T>& v, int64_t first, int64_t count) {
    return std::vector<T>(v.begin() + first, v.begin() + first + count);
}

// The rows of `heads`, `per_head` rows each.
MatrixView rows_of(const MatrixView& m, Range heads, int64_t per_head) {
    return m.row_range(heads.first * per_head, heads.count * per_head);
}

void shard_kda(KdaWeights& w, const HParams& hp, int rank, int size) {
    if (w.n_head < size) return;
    const int64_t D = w.head_dim, K = hp.conv_kernel;
    const Range heads = parallel::share_of(w.n_head, rank, size);
    for (MatrixView* m : {&w.q, &w.k, &w.v, &w.f_b, &w.g}) *m = rows_of(*m, heads, D);
    for (std::vector<float>* taps : {&w.conv_q, &w.conv_k, &w.conv_v})
        *taps = slice(*taps, heads.first * D * K, heads.count * D * K);
    w.dt_bias = slice(w.dt_bias, heads.first * D, heads.count * D);
    w.a = slice(w.a, heads.first, heads.count);
    w.beta = rows_of(w.beta, heads, 1);
    w.n_head_total = w.n_head;
    w.n_head = heads.count;
}

void shard_mla(MlaWeights& w, const HParams& hp, int rank, int size) {
    if (w.n_head < size) return;
    const Range heads = parallel::share_of(w.n_head, rank, size);
    if (w.q_b) w.q_b = rows_of(*w.q_b, heads, hp.key_length_mla);
    if (w.q) w.q = rows_of(*w.q, heads, hp.key_length_mla);
    w.k_b = rows_of(w.k_b, heads, hp.kv_lora_rank);
    w.v_b = rows_of(w.v_b, heads, hp.value_length_mla);
    if (w.gate) w.gate = rows_of(*w.gate, heads, hp.value_length_mla);
    w.n_head_total = w.n_head;
    w.n_head = heads.count;
}

}  // namespace

std::vector<int32_t> assign_experts(int64_t n_expert, int size, std::span<const double> loads) {
    std::vector<int32_t> rank_of(size_t(n_expert), 0);
    if (std::all_of(loads.begin(), loads.end(), [](double load) { return load == 0.0; })) {
        for (int r = 0; r < size; ++r) {
            const Range experts = parallel::share_of(n_expert, r, size);
            std::fill_n(rank_of.begin() + experts.first, experts.count, r);
        }
        return rank_of;
    }
    std::vector<int32_t> heaviest(static_cast<size_t>(n_expert));
    std::iota(heaviest.begin(), heaviest.end(), 0);
    std::stable_sort(heaviest.begin(), heaviest.end(),
                     [&](int32_t a, int32_t b) { return loads[size_t(a)] > loads[size_t(b)]; });
    const int64_t capacity = (n_expert + size - 1) / size;
    std::vector<double> load(size_t(size), 0.0);
    std::vector<int64_t> held(size_t(size), 0);
    for (int32_t e : heaviest) {
        int best = -1;
        for (int r = 0; r < size; ++r)
            if (held[size_t(r)] < capacity && (best < 0 || load[size_t(r)] < load[size_t(best)])) best = r;
        rank_of[size_t(e)] = best;
        load[size_t(best)] += loads[size_t(e)];
        ++held[size_t(best)];
    }
    return rank_of;
}

void shard_weights(ModelWeights& weights, const HParams& hp, int rank, int size, std::span<const double> expert_loads) {
    for (size_t il = 0; il < weights.layers.size(); ++il) {
        LayerWeights& layer = weights.layers[il];
        if (layer.kda) shard_kda(*layer.kda, hp, rank, size);
        if (layer.mla) shard_mla(*layer.mla, hp, rank, size);
        if (layer.moe) {
            const size_t X = size_t(hp.n_expert);
            const std::span<const double> loads = expert_loads.empty() ? expert_loads : expert_loads.subspan(il * X, X);
            layer.moe->expert_rank = assign_experts(hp.n_expert, size, loads);
        }
    }
}

}  // namespace k3::model
