// Tensor and expert parallelism over a parallel::Collective (issue #17). Each rank multiplies
// only its share of a matrix's rows, so it reads (and makes resident) only those rows of the
// mapped weights; a product's rows do not depend on which other rows share the call, so the
// gathered result is bit for bit what one process computes.
#include <algorithm>
#include <vector>

#include "model/context.h"

namespace k3::model {

namespace {

// One collective for results the ranks computed in parts: rank r's block is the concatenation, in
// the order added, of its runs (contiguous floats of the results). This rank writes its own runs
// into its block (own_run), the ranks exchange the blocks, and every run is copied into place.
class RankParts {
public:
    RankParts(parallel::Collective& collective, GatherTo to)
        : collective_(collective), to_(to), runs_(size_t(collective.size())) {}

    int rank() const { return collective_.rank(); }
    int n_ranks() const { return collective_.size(); }

    // Rank r's next run: `count` floats at `at`. Returns where the run lies in this rank's block
    // when r is this rank (else null); valid until the next add.
    float* add(int r, float* at, int64_t count) {
        runs_[size_t(r)].push_back({at, count});
        if (r != rank()) return nullptr;
        mine_.resize(mine_.size() + size_t(count));
        return mine_.data() + (mine_.size() - size_t(count));
    }
    // Columns [share.first * unit, share.end() * unit) of n rows, for every rank's share of n_units:
    // rank r's part is [n][share * unit]. Returns this rank's part of the block.
    float* add_columns(float* y, int64_t y_stride, int64_t n, int64_t n_units, int64_t unit) {
        const size_t start = mine_.size();
        for (int r = 0; r < n_ranks(); ++r) {
            const parallel::Range share = parallel::share_of(n_units, r, n_ranks());
            for (int64_t t = 0; t < n && share.count > 0; ++t)
                add(r, y + t * y_stride + share.first * unit, share.count * unit);
        }
        return mine_.data() + start;
    }
    // The products of `outputs`, this rank computing its share of each matrix's rows into its block.
    void add_products(const ForwardContext& ctx, std::span<const kernels::MatmulOutput> outputs, const float* x,
                      int64_t x_stride, int64_t n) {
        std::vector<size_t> starts;
        for (const kernels::MatmulOutput& o : outputs) {
            starts.push_back(mine_.size());
            add_columns(o.y, o.y_stride, n, o.w->rows, 1);
        }
        std::vector<kernels::MatrixView> views;
        std::vector<kernels::MatmulOutput> local;
        views.reserve(outputs.size());
        for (size_t i = 0; i < outputs.size(); ++i) {
            const parallel::Range rows = collective_.share(outputs[i].w->rows);
            if (rows.count == 0) continue;
            views.push_back(outputs[i].w->row_range(rows.first, rows.count));
            local.push_back({&views.back(), mine_.data() + starts[i], rows.count});
        }
        if (!local.empty()) kernels::matmul_same_input(ctx.pool, local, x, x_stride, n, ctx.numerics);
    }

    void exchange() {
        std::vector<int64_t> counts(runs_.size(), 0);
        for (size_t r = 0; r < runs_.size(); ++r)
            for (const Run& run : runs_[r]) counts[r] += run.count;
        int64_t total = 0;
        for (int64_t c : counts) total += c;
        const bool receives = to_ == GatherTo::every_rank || rank() == 0;
        std::vector<float> all(receives ? size_t(total) : 0);
        if (to_ == GatherTo::root) collective_.gather_to_root(mine_, counts, all.data());
        else collective_.allgather(mine_, counts, all.data());
        if (!receives) return;
        const float* block = all.data();
        for (const std::vector<Run>& runs : runs_)
            for (const Run& run : runs) {
                std::copy(block, block + run.count, run.at);
                block += run.count;
            }
    }

private:
    struct Run {
        float* at;
        int64_t count;
    };
    parallel::Collective& collective_;
    GatherTo to_;
    std::vector<std::vector<Run>> runs_;  // per rank
    std::vector<float> mine_;             // this rank's block
};

}  // namespace

void sharded_products(const ForwardContext& ctx, std::span<const kernels::MatmulOutput> outputs, const float* x,
                      int64_t x_stride, int64_t n, GatherTo to) {
    RankParts parts(*ctx.collective, to);
    parts.add_products(ctx, outputs, x, x_stride, n);
    parts.exchange();
}

void project_heads(const ForwardContext& ctx, const kernels::MatrixView& w_out, const float* o, int64_t n,
                   int64_t n_head, int64_t n_head_total, int64_t head_width, float* out) {
    if (n_head_total == 0) return ctx.linear(w_out, o, n, out);
    std::vector<float> all(size_t(n * n_head_total * head_width));
    RankParts parts(*ctx.collective, GatherTo::every_rank);
    float* mine = parts.add_columns(all.data(), n_head_total * head_width, n, n_head_total, head_width);
    std::copy(o, o + n * n_head * head_width, mine);
    parts.exchange();
    ctx.linear(w_out, all.data(), n, out);
}

void gather_expert_outputs(const ForwardContext& ctx, std::span<const int32_t> expert_rank,
                           std::span<const int64_t> first_member, int64_t width, std::vector<float>& expert_out,
                           std::span<const kernels::MatmulOutput> also, const float* x, int64_t n) {
    RankParts parts(*ctx.collective, GatherTo::every_rank);
    const int64_t n_expert = int64_t(first_member.size()) - 1;
    for (int64_t e = 0; e < n_expert; ++e) {
        const int64_t first = first_member[size_t(e)], count = first_member[size_t(e) + 1] - first;
        if (count == 0) continue;
        float* rows = expert_out.data() + first * width;
        if (float* mine = parts.add(expert_rank[size_t(e)], rows, count * width))
            std::copy(rows, rows + count * width, mine);
    }
    if (!also.empty()) parts.add_products(ctx, also, x, also.front().w->cols, n);
    parts.exchange();
}

}  // namespace k3::model
