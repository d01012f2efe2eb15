#include "model/mla.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <span>

#include "kernels/matmul.h"
#include "kernels/vector_ops.h"

namespace k3::model {

namespace {

// y[t][h] = W_h x[t][h] for every head h < n_head, where W's rows are the heads' matrices one
// after another (W_h: rows [h · r, (h + 1) · r)), x[t][h] is x_width values at
// x + (t · n_head + h) · x_width (the matrices read its first W.cols) and y[t][h] is r values at
// y + (t · n_head + h) · r. Every head in one pass: decode's heads, a hand-off each, ran at a
// quarter of the rate of the layer's other products.
void head_products(const ForwardContext& ctx, const kernels::MatrixView& w, int64_t n_head, int64_t r, const float* x,
                   int64_t x_width, int64_t n, float* y) {
    auto* const heads = ctx.scratch.take<kernels::MatrixView>(n_head);
    auto* const outputs = ctx.scratch.take<kernels::MatmulOutput>(n_head);
    auto* const groups = ctx.scratch.take<kernels::MatmulGroup>(n_head);
    for (int64_t h = 0; h < n_head; ++h) {
        const kernels::MatrixView* head = new (heads + h) kernels::MatrixView(w.row_range(h * r, r));
        ctx.observed(*head, x + h * x_width, n_head * x_width, n);
        const kernels::MatmulOutput* output = new (outputs + h) kernels::MatmulOutput{head, y + h * r, n_head * r};
        new (groups + h) kernels::MatmulGroup{std::span(output, 1), x + h * x_width, n_head * x_width, n};
    }
    ctx.unsharded().linear_groups(std::span(groups, size_t(n_head)));
}

}  // namespace

void mla_forward(const ForwardContext& ctx, const MlaWeights& w, int64_t il, const float* x, int64_t n,
                 std::span<const SequenceSlice> sequences, float* out) {
    const HParams& hp = ctx.hp;
    const int64_t H = w.n_head, Dk = hp.key_length_mla, Dv = hp.value_length_mla;
    const int64_t Lkv = hp.kv_lora_rank, Dr = hp.rope_dim, Dn = hp.nope_dim(), row = Lkv + Dr;
    // A parallel rank's own heads (model/shard.h): their projections computed whole here.
    const ForwardContext heads_ctx = w.n_head_total ? ctx.unsharded() : ctx;

    // The products of x in one pass: W_qa · x (or W_q · x), W_kva · x and the output gate's W_gate · x.
    const ScratchArena::Frame frame(ctx.scratch);
    const auto buffer = [&](int64_t floats) { return ctx.scratch.floats(floats); };
    float *const q = buffer(n * H * Dk), *const kv = buffer(n * row), *const gate = buffer(w.gate ? n * H * Dv : 0);
    const int64_t Lq = w.q_a ? w.q_a->rows : 0;
    float* const q_a = buffer(n * Lq);
    kernels::MatmulOutput of_x[3] = {
        w.q_a ? kernels::MatmulOutput{&*w.q_a, q_a, Lq} : kernels::MatmulOutput{&*w.q, q, w.q->rows},
        {&w.kv_a, kv, w.kv_a.rows}};
    if (w.gate) of_x[2] = {&*w.gate, gate, w.gate->rows};
    heads_ctx.linear_same_input(std::span(of_x, w.gate ? 3 : 2), x, n);
    // 1. q = W_qb · RMSNorm(W_qa · x) (LoRA) or W_q · x: [n][H][Dk], per head [q_nope | q_pe]
    if (w.q_a) {
        ctx.for_each_piece(n, Lq, [&](int64_t first, int64_t last) {
            for (int64_t t = first; t < last; ++t)
                kernels::rms_norm(q_a + t * Lq, w.q_a_norm.data(), hp.rms_eps, Lq, q_a + t * Lq);
        });
        heads_ctx.linear(*w.q_b, q_a, n, q);
    }
    // 2. kv = W_kva · x: [n][Lkv + Dr]; c = RMSNorm(kv[:Lkv]), k_pe = kv[Lkv:] (raw, no RoPE)
    ctx.for_each_piece(n, Lkv, [&](int64_t first, int64_t last) {
        for (int64_t t = first; t < last; ++t)
            kernels::rms_norm(kv + t * row, w.kv_a_norm.data(), hp.rms_eps, Lkv, kv + t * row);
    });
    for (const SequenceSlice& s : sequences)
        s.state->layers[size_t(il)].mla.append(kv + s.first * row, s.n_tokens);

    // 4. absorbed query q~[h] = W_kb[h]^T q_nope[h]: [n][H][Lkv]
    float* const q_latent = buffer(n * H * Lkv);
    head_products(ctx, w.k_b, H, Lkv, q, Dk, n, q_latent);

    // score(t, s) = (q~[h]·c_s + q_pe[h]·k_pe_s) / sqrt(Dk), causal softmax, o~[h] = sum_s p_s c_s
    float* const attended = buffer(n * H * Lkv);  // [n][H][Lkv]
    const float scale = 1.0f / std::sqrt(float(Dk));
    // A sequence's queries kQueryBlock at a time (decode's one alone): their scores a product with
    // the cache's rows (per position, two dots and an axpy a query were a tenth of AVX2 prefill
    // at 2048 tokens), their outputs row combinations of its latent rows, page by page. Each
    // (query, position) pair and each output sum their terms in the same order whatever the
    // block, so that a token attends with the same arithmetic in prefill and in decode.
    constexpr int64_t kQueryBlock = 16;
    const kernels::TileProductFn product = kernels::tile_product();
    const kernels::CombineRowsFn combine = kernels::combine_rows();
    const int64_t n_tasks = int64_t(sequences.size()) * H;
    ctx.pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
        const SequenceSlice& s = sequences[size_t(task / H)];
        const int64_t h = task % H;
        const PagedRows& cache = s.state->layers[size_t(il)].mla;
        const int64_t n_cached = cache.size();
        const int64_t start = n_cached - s.n_tokens;  // position of the slice's first token
        const int64_t block = std::min(kQueryBlock, s.n_tokens);
        // [block][row] queries as [q~ | q_pe], then [block][n_cached] scores.
        auto* const queries =
            static_cast<float*>(ctx.pool.thread_scratch(thread, size_t(block * (row + n_cached)) * sizeof(float)));
        float* const scores = queries + block * row;
        for (int64_t i0 = 0; i0 < s.n_tokens; i0 += block) {
            const int64_t nb = std::min(block, s.n_tokens - i0), end = start + i0 + nb;
            for (int64_t i = 0; i < nb; ++i) {
                const int64_t t = s.first + i0 + i;
                std::copy_n(q_latent + (t * H + h) * Lkv, Lkv, queries + i * row);
                std::copy_n(q + (t * H + h) * Dk + Dn, Dr, queries + i * row + Lkv);
            }
            for (int64_t p0 = 0; p0 < end; p0 += PagedRows::kTokensPerPage)
                product(cache.row(p0), row, std::min(PagedRows::kTokensPerPage, end - p0), row, queries, row, nb,
                        scores + p0, n_cached);
            for (int64_t i = 0; i < nb; ++i) {
                float* const p = scores + i * n_cached;
                const int64_t visible = start + i0 + i + 1;
                for (int64_t j = 0; j < visible; ++j) p[j] *= scale;
                kernels::softmax(p, visible);
            }
            // Query i sees positions [0, start + i0 + 1 + i).
            for (int64_t p0 = 0; p0 < end; p0 += PagedRows::kTokensPerPage)
                combine(scores + p0, n_cached, nb, start + i0 + 1 - p0, std::min(PagedRows::kTokensPerPage, end - p0),
                        cache.row(p0), row, Lkv, attended + ((s.first + i0) * H + h) * Lkv, H * Lkv, p0 > 0);
        }
    });

    // o[h] = W_vb[h] o~[h]: [n][H][Dv]
    float* const o = buffer(n * H * Dv);
    head_products(ctx, w.v_b, H, Dv, attended, Lkv, n, o);
    // 5. output gate o *= sigmoid(W_gate x);  6. out = W_o o
    if (w.gate) {
        kernels::multiply_sigmoid(gate, n * H * Dv, o);
        ctx.emit(layer_name(il, "mla_gated"), o, n, H * Dv);
    }
    project_heads(ctx, w.out, o, n, H, w.n_head_total, Dv, out);
    ctx.emit(layer_name(il, "mla_out"), out, n, hp.n_embd);
}

}  // namespace k3::model
