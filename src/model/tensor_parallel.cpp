// Tensor and expert parallelism over a parallel::Collective (issue #17). Each rank multiplies
// only its share of a matrix's rows, so it reads (and makes resident) only those rows of the
// mapped weights; a product's rows do not depend on which other rows share the call, so the
// gathered result is bit for bit what one process computes.
#include <algorithm>
#include <vector>

#include "model/context.h"

namespace k3::model {

namespace {

// One result whose columns the ranks computed in shares: rank r computed columns
// [share.first * unit, share.end() * unit) of every row, for its share of n_units.
struct SharedColumns {
    float* y;  // [n][n_units * unit], rows y_stride floats apart
    int64_t y_stride, n_units, unit;
};

// Gathers every rank's blocks into each target's columns. Rank r's block holds, target after
// target, its columns of that target for every row: [n][share * unit].
void gather_columns(parallel::Collective& collective, std::span<const float> mine, int64_t n,
                    std::span<const SharedColumns> targets) {
    const int n_ranks = collective.size();
    std::vector<int64_t> counts(size_t(n_ranks), 0);
    for (int r = 0; r < n_ranks; ++r)
        for (const SharedColumns& c : targets)
            counts[size_t(r)] += n * parallel::share_of(c.n_units, r, n_ranks).count * c.unit;
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<float> all(static_cast<size_t>(total));
    collective.allgather(mine, counts, all.data());
    const float* block = all.data();
    for (int r = 0; r < n_ranks; ++r)
        for (const SharedColumns& c : targets) {
            const parallel::Range share = parallel::share_of(c.n_units, r, n_ranks);
            const int64_t width = share.count * c.unit;
            for (int64_t t = 0; t < n; ++t)
                std::copy(block + t * width, block + (t + 1) * width, c.y + t * c.y_stride + share.first * c.unit);
            block += n * width;
        }
}

}  // namespace

void sharded_products(const ForwardContext& ctx, std::span<const kernels::MatmulOutput> outputs, const float* x,
                      int64_t x_stride, int64_t n) {
    parallel::Collective& collective = *ctx.collective;
    std::vector<kernels::MatrixView> views;
    std::vector<kernels::MatmulOutput> local;
    std::vector<SharedColumns> targets;
    views.reserve(outputs.size());
    int64_t mine = 0;
    for (const kernels::MatmulOutput& o : outputs) {
        targets.push_back({o.y, o.y_stride, o.w->rows, 1});
        mine += n * collective.share(o.w->rows).count;
    }
    std::vector<float> block(static_cast<size_t>(mine));
    int64_t at = 0;
    for (const kernels::MatmulOutput& o : outputs) {
        const parallel::Range rows = collective.share(o.w->rows);
        if (rows.count == 0) continue;
        views.push_back(o.w->row_range(rows.first, rows.count));
        local.push_back({&views.back(), block.data() + at, rows.count});
        at += n * rows.count;
    }
    if (!local.empty()) kernels::matmul_same_input(ctx.pool, local, x, x_stride, n, ctx.numerics);
    gather_columns(collective, block, n, targets);
}

void project_heads(const ForwardContext& ctx, const kernels::MatrixView& w_out, const float* o, int64_t n,
                   int64_t n_head, int64_t n_head_total, int64_t head_width, float* out) {
    if (n_head_total == 0) return ctx.linear(w_out, o, n, out);
    std::vector<float> all(size_t(n * n_head_total * head_width));
    const SharedColumns heads{all.data(), n_head_total * head_width, n_head_total, head_width};
    gather_columns(*ctx.collective, std::span(o, size_t(n * n_head * head_width)), n, std::span(&heads, 1));
    ctx.linear(w_out, all.data(), n, out);
}

void gather_expert_outputs(const ForwardContext& ctx, std::span<const int64_t> first_member, int64_t width,
                           std::vector<float>& expert_out) {
    parallel::Collective& collective = *ctx.collective;
    const int64_t n_expert = int64_t(first_member.size()) - 1;
    // The members are grouped by expert id, so the shares of the ids tile expert_out in rank order.
    std::vector<int64_t> counts;
    for (int r = 0; r < collective.size(); ++r) {
        const parallel::Range experts = parallel::share_of(n_expert, r, collective.size());
        counts.push_back((first_member[size_t(experts.end())] - first_member[size_t(experts.first)]) * width);
    }
    const parallel::Range mine = collective.share(n_expert);
    const std::vector<float> own(expert_out.begin() + first_member[size_t(mine.first)] * width,
                                 expert_out.begin() + first_member[size_t(mine.end())] * width);
    collective.allgather(own, counts, expert_out.data());
}

}  // namespace k3::model
