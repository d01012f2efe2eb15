// What every layer function of a forward pass needs besides its weights: the hyper-parameters,
// the thread pool, the scratch arena, the KDA path choice and the intermediate dumper.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "model/hparams.h"
#include "model/scratch_arena.h"
#include "parallel/collective.h"

namespace k3::model {

class ExpertSource;
struct MoeScratch;

enum class KdaMode {
    automatic,  // chunked for multi-token runs, recurrent for single tokens
    recurrent,  // token by token (§4.4) always
    chunked,    // chunked form (§4.5) always
};

// Receives named intermediates: rows x cols f32, one row per batch token (row-major).
using DumpFn = std::function<void(const std::string& name, const float* data, int64_t rows, int64_t cols)>;
// Sees the input of every product with a weight matrix: n rows of w.cols values, x_stride apart
// (k3 imatrix collects the squared activations per weight from it). w.data is where the weight
// lies in the model's mapped file, also for a resident trunk or a streamed expert.
using MatmulObserver = std::function<void(const kernels::MatrixView& w, const float* x, int64_t x_stride, int64_t n)>;

struct ForwardContext;
// Which ranks receive a sharded result.
enum class GatherTo { every_rank, root };
// The products of `outputs` (all reading x) with each rank computing its share of every matrix's
// rows, then gathered so that every rank (or rank 0 alone) holds every row: the same values as
// one process computes (model/tensor_parallel.cpp).
void sharded_products(const ForwardContext& ctx, std::span<const kernels::MatmulOutput> outputs, const float* x,
                      int64_t x_stride, int64_t n, GatherTo to = GatherTo::every_rank);

struct ForwardContext {
    const HParams& hp;
    kernels::ThreadPool& pool;
    ScratchArena& scratch;  // the layers' intermediate buffers (each layer call opens a Frame)
    MoeScratch& moe;        // moe_forward's buffers
    KdaMode kda_mode = KdaMode::automatic;
    const DumpFn* dump = nullptr;
    ExpertSource* experts = nullptr;  // routed experts' weights (model/expert_source.h)
    // Of every product with a quantised weight (kernels::Numerics). A context built by hand
    // computes the plain f32 definition; Model::forward passes ForwardOptions::numerics.
    kernels::Numerics numerics = kernels::Numerics::exact;
    // A parallel job (issue #17): each rank computes its share of every linear()'s rows and the
    // ranks exchange them, so every rank ends with the whole product. Null: this process alone.
    parallel::Collective* collective = nullptr;
    const MatmulObserver* observe = nullptr;  // null: nobody watches the products

    // y[t] = W x[t] for n contiguous rows (x rows W.cols apart, y rows W.rows apart).
    void linear(const kernels::MatrixView& w, const float* x, int64_t n, float* y) const {
        observed(w, x, w.cols, n);
        const kernels::MatmulOutput output{&w, y, w.rows};
        if (collective) return sharded_products(*this, std::span(&output, 1), x, w.cols, n);
        kernels::matmul(pool, w, x, w.cols, n, y, w.rows, numerics);
    }
    // linear(), except that in a parallel job only rank 0 receives y (the others' y is not written).
    void linear_to_root(const kernels::MatrixView& w, const float* x, int64_t n, float* y) const {
        if (!collective) return linear(w, x, n, y);
        observed(w, x, w.cols, n);
        const kernels::MatmulOutput output{&w, y, w.rows};
        sharded_products(*this, std::span(&output, 1), x, w.cols, n, GatherTo::root);
    }
    // Every output's y = W x for the same n rows of x (W.cols apart) in one pass over x
    // (kernels::matmul_same_input: x rounded once, one hand-off to the threads).
    void linear_same_input(std::span<const kernels::MatmulOutput> outputs, const float* x, int64_t n) const {
        for (const kernels::MatmulOutput& output : outputs) observed(*output.w, x, output.w->cols, n);
        if (collective) return sharded_products(*this, outputs, x, outputs.front().w->cols, n);
        kernels::matmul_same_input(pool, outputs, x, outputs.front().w->cols, n, numerics);
    }
    // gate[t] = W_gate x[t] and up[t] = W_up x[t] in one pass over x.
    void linear_pair(const kernels::MatrixView& w_gate, const kernels::MatrixView& w_up, const float* x, int64_t n,
                     float* gate, float* up) const {
        const kernels::MatmulOutput outputs[] = {{&w_gate, gate, w_gate.rows}, {&w_up, up, w_up.rows}};
        linear_same_input(outputs, x, n);
    }
    // Several inputs' products, each with its own matrices, in one pass (kernels::matmul_groups):
    // whole products, for weights this rank holds whole (an unsharded() context's). The caller
    // shows the observer each product: these weights may lie outside the mapped file (a MoE
    // layer's experts in an expert cache).
    void linear_groups(std::span<const kernels::MatmulGroup> groups) const {
        kernels::matmul_groups(pool, groups, numerics);
    }
    // This context computing whole products on this rank (for weights only this rank holds).
    ForwardContext unsharded() const {
        ForwardContext local = *this;
        local.collective = nullptr;
        return local;
    }
    // Shows a product's input to the observer (for products not made through linear()).
    void observed(const kernels::MatrixView& w, const float* x, int64_t x_stride, int64_t n) const {
        if (observe && *observe) (*observe)(w, x, x_stride, n);
    }
    void emit(const std::string& name, const float* data, int64_t rows, int64_t cols) const {
        if (dump && *dump) (*dump)(name, data, rows, cols);
    }
    // fn(first, last) over the items [0, n), each of about item_values values of work: in pieces
    // on the pool's threads when the whole is worth the hand-off (prefill), else in one call on
    // this thread (decode). The items must be independent (rows, channels, elements), so that
    // the results do not depend on the split.
    template <typename Fn>
    void for_each_piece(int64_t n, int64_t item_values, Fn&& fn) const {
        constexpr int64_t kPieceValues = int64_t(1) << 14;  // a few microseconds of elementwise work
        const int64_t pieces = std::min({n, int64_t(pool.size()) * 4, n * item_values / kPieceValues});
        if (pieces <= 1) return fn(int64_t(0), n);
        pool.parallel_for(pieces, [&](int64_t piece, int) { fn(n * piece / pieces, n * (piece + 1) / pieces); });
    }
};

// out = W_out o for the outputs o ([n][n_head * head_width]) of a layer's heads: when they are
// a parallel rank's share of n_head_total heads (model/shard.h), every rank's heads are gathered
// first; n_head_total 0: o holds every head.
void project_heads(const ForwardContext& ctx, const kernels::MatrixView& w_out, const float* o, int64_t n,
                   int64_t n_head, int64_t n_head_total, int64_t head_width, float* out);

// Expert parallel: each rank computed the outputs of the experts e it runs (expert_rank[e]): rows
// [first_member[e], first_member[e + 1]) of expert_out, `width` floats each; afterwards every rank
// holds every expert's rows. The products `also` of x (n rows), split by rows as linear() splits
// them, travel in the same collective (the shared expert's down projection).
void gather_expert_outputs(const ForwardContext& ctx, std::span<const int32_t> expert_rank,
                           std::span<const int64_t> first_member, int64_t width, std::vector<float>& expert_out,
                           std::span<const kernels::MatmulOutput> also = {}, const float* x = nullptr, int64_t n = 0);

// A layer's intermediate named as llama.cpp's graph callback names it ("l_out-3"), so that a
// dump diffs against the reference's name by name.
inline std::string layer_name(int64_t il, const char* what) { return std::string(what) + "-" + std::to_string(il); }

}  // namespace k3::model
