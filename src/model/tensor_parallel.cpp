// Tensor and expert parallelism over a parallel::Collective (issue #17). Each rank multiplies
// only its share of a matrix's rows, so it reads (and makes resident) only those rows of the
// mapped weights; a product's rows do not depend on which other rows share the call, so the
// gathered result is bit for bit what one process computes.
#include <algorithm>
#include <vector>

#include "model/context.h"

namespace k3::model {

void sharded_products(const ForwardContext& ctx, std::span<const kernels::MatmulOutput> outputs, const float* x,
                      int64_t x_stride, int64_t n) {
    parallel::Collective& collective = *ctx.collective;
    const int n_ranks = collective.size();
    // Rank r's block holds, output after output, its rows of that output for every token: [n][share].
    std::vector<int64_t> counts(size_t(n_ranks), 0);
    for (int r = 0; r < n_ranks; ++r)
        for (const kernels::MatmulOutput& o : outputs) counts[size_t(r)] += n * parallel::share_of(o.w->rows, r, n_ranks).count;
    std::vector<float> mine(size_t(counts[size_t(collective.rank())]));
    std::vector<kernels::MatrixView> views;
    std::vector<kernels::MatmulOutput> local;
    views.reserve(outputs.size());
    int64_t at = 0;
    for (const kernels::MatmulOutput& o : outputs) {
        const parallel::Range rows = collective.share(o.w->rows);
        if (rows.count == 0) continue;
        views.push_back(o.w->row_range(rows.first, rows.count));
        local.push_back({&views.back(), mine.data() + at, rows.count});
        at += n * rows.count;
    }
    if (!local.empty()) kernels::matmul_same_input(ctx.pool, local, x, x_stride, n, ctx.numerics);

    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<float> all(static_cast<size_t>(total));
    collective.allgather(mine, counts, all.data());
    const float* block = all.data();
    for (int r = 0; r < n_ranks; ++r)
        for (const kernels::MatmulOutput& o : outputs) {
            const parallel::Range rows = parallel::share_of(o.w->rows, r, n_ranks);
            for (int64_t t = 0; t < n; ++t)
                std::copy(block + t * rows.count, block + (t + 1) * rows.count, o.y + t * o.y_stride + rows.first);
            block += n * rows.count;
        }
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
