#include "model/kda.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/vector_ops.h"

namespace k3::model {

int64_t kda_scratch_floats(int64_t head_dim, int64_t chunk) {
    const int64_t D = head_dim, C = chunk;
    return std::max(2 * D, 6 * C * D + 2 * C * C + D);
}

void kda_recurrent(const KdaHeadRun& run, float* state, float* scratch) {
    const int64_t D = run.head_dim;
    float* const prediction = scratch;  // [D]
    float* const error = scratch + D;   // [D]
    for (int64_t t = 0; t < run.n_tokens; ++t) {
        const float* q = run.q + t * run.stride;
        const float* k = run.k + t * run.stride;
        const float* v = run.v + t * run.stride;
        const float* g = run.g + t * run.stride;
        const float beta = run.beta[t * run.beta_stride];
        // 1-2. S <- Diag(exp(g)) S (row i = key channel i);  e = v - S^T k
        std::fill(prediction, prediction + D, 0.0f);
        for (int64_t i = 0; i < D; ++i) {
            float* row = state + i * D;
            const float decay = std::exp(g[i]);
            for (int64_t j = 0; j < D; ++j) row[j] *= decay;
            kernels::axpy_f32(k[i], row, prediction, D);
        }
        for (int64_t j = 0; j < D; ++j) error[j] = beta * (v[j] - prediction[j]);
        // 3-4. S <- S + beta k ⊗ e;  o = S^T q
        float* o = run.out + t * run.out_stride;
        std::fill(o, o + D, 0.0f);
        for (int64_t i = 0; i < D; ++i) {
            float* row = state + i * D;
            kernels::axpy_f32(k[i], error, row, D);
            kernels::axpy_f32(q[i], row, o, D);
        }
    }
}

void kda_chunked(const KdaHeadRun& run, float* state, int64_t chunk, float* scratch) {
    const int64_t D = run.head_dim, C = chunk;
    float* const G = scratch;              // [C][D] cumulative log-decay within the chunk
    float* const neg_A = G + C * D;        // [C][C] -A, strictly lower
    float* const P = neg_A + C * C;        // [C][C] lower incl. diagonal
    float* const UW = P + C * C;           // [C][2D] U | W, each row's two side by side
    float* const Vp = UW + 2 * C * D;      // [C][D]
    float* const last_decay = Vp + C * D;  // [D] exp(G_last)
    float* const Qe = last_decay + D;      // [C][D] Q ⊙ exp(G), then exp(G_last - G)
    float* const state_coef = Qe + C * D;  // [D][C] the state update's coefficients
    // Every sum over rows below is a row combination (kernels::combine_rows): register-blocked,
    // each element's terms added in order with axpy_f32's rounding. The state's update needs
    // that order, the recurrence's (as a tile product, the logits of a sequence replayed from a
    // checkpoint moved 3x further from the same sequence computed cold); it was D·m axpys, the
    // forward substitution m² and O's P V' m²/2, and V' and O's products with S_0 took S_0
    // transposed.
    const kernels::CombineRowsFn combine = kernels::combine_rows();
    for (int64_t c0 = 0; c0 < run.n_tokens; c0 += C) {
        const int64_t m = std::min(C, run.n_tokens - c0);
        auto q = [&](int64_t i) { return run.q + (c0 + i) * run.stride; };
        auto k = [&](int64_t i) { return run.k + (c0 + i) * run.stride; };
        auto v = [&](int64_t i) { return run.v + (c0 + i) * run.stride; };
        auto beta = [&](int64_t i) { return run.beta[(c0 + i) * run.beta_stride]; };
        // G_i = sum_{j<=i} g_j
        for (int64_t i = 0; i < m; ++i) {
            const float* g = run.g + (c0 + i) * run.stride;
            for (int64_t c = 0; c < D; ++c) G[i * D + c] = (i ? G[(i - 1) * D + c] : 0.0f) + g[c];
        }
        // A[i][j] = beta_i sum_c k_i[c] k_j[c] exp(G_i[c] - G_j[c])   (j < i)
        // P[i][j] =        sum_c q_i[c] k_j[c] exp(G_i[c] - G_j[c])   (j <= i)
        // Only differences G_i - G_j <= 0 are exponentiated, so nothing overflows. decayed_dots
        // makes one pass of what were five over a buffer (differences, exps, products with k_j,
        // two dots).
        for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j <= i; ++j) {
                float qk = 0.0f, kk = 0.0f;
                kernels::decayed_dots(G + i * D, G + j * D, k(j), q(i), k(i), D, &qk, &kk);
                P[i * C + j] = qk;
                if (j < i) neg_A[i * C + j] = -(beta(i) * kk);
            }
        }
        // exp(G) in Qe until it is multiplied by Q below.
        kernels::exp(G, m * D, Qe);
        // (I + A) U = diag(beta) V,  (I + A) W = diag(beta) (K ⊙ exp(G))   (forward substitution)
        for (int64_t i = 0; i < m; ++i) {
            float* const u = UW + i * 2 * D;
            float* const w = u + D;
            for (int64_t c = 0; c < D; ++c) {
                u[c] = beta(i) * v(i)[c];
                w[c] = beta(i) * k(i)[c] * Qe[i * D + c];
            }
            combine(neg_A + i * C, C, 1, i, i, UW, 2 * D, 2 * D, u, 2 * D, true);
        }
        // V' = U - W S_0;  O = (Q ⊙ exp(G)) S_0 + P V'
        combine(UW + D, 2 * D, m, D, D, state, D, D, Vp, D, false);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t c = 0; c < D; ++c) Vp[i * D + c] = UW[i * 2 * D + c] - Vp[i * D + c];
        for (int64_t i = 0; i < m; ++i)
            for (int64_t c = 0; c < D; ++c) Qe[i * D + c] *= q(i)[c];
        float* const out = run.out + c0 * run.out_stride;
        combine(Qe, D, m, D, D, state, D, D, out, run.out_stride, false);
        combine(P, C, m, 1, m, Vp, D, D, out, run.out_stride, true);
        // S_C = Diag(exp(G_last)) S_0 + sum_j (k_j ⊙ exp(G_last - G_j)) ⊗ v'_j, those exps in Qe
        // (no longer needed) and exp(G_last) in last_decay.
        const float* G_last = G + (m - 1) * D;
        for (int64_t j = 0; j < m; ++j)
            for (int64_t c = 0; c < D; ++c) Qe[j * D + c] = G_last[c] - G[j * D + c];
        kernels::exp(Qe, m * D, Qe);
        kernels::exp(G_last, D, last_decay);
        for (int64_t c = 0; c < D; ++c) {
            for (int64_t j = 0; j < m; ++j) state_coef[c * C + j] = k(j)[c] * Qe[j * D + c];
            float* row = state + c * D;
            for (int64_t j = 0; j < D; ++j) row[j] *= last_decay[c];
        }
        combine(state_coef, C, D, m, m, Vp, D, D, state, D, true);
    }
}

namespace {

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// The conv states after each capture of the slice: per channel the last K-1 pre-conv inputs
// before it, from the slice's rows of u_q/u_k/u_v and, before the slice, its old state. Called
// before the conv advances `conv` ([3][I][K-1], oldest first).
void capture_conv(const SequenceSlice& s, int64_t il, const std::vector<float>& conv, std::array<const float*, 3> u,
                  int64_t I, int64_t K) {
    const int64_t part = I * (K - 1);
    for (size_t i = 0; i < s.capture_at.size(); ++i) {
        float* out = s.captured[i].layers[size_t(il)].kda->conv.data();
        for (int64_t p = 0; p < 3; ++p)
            for (int64_t c = 0; c < I; ++c)
                for (int64_t j = 0; j < K - 1; ++j) {
                    const int64_t t = s.capture_at[i] - (K - 1) + j;  // token index into the slice
                    out[p * part + c * (K - 1) + j] =
                        t >= 0 ? u[size_t(p)][(s.first + t) * I + c] : conv[size_t(p * part + c * (K - 1) + (t + K - 1))];
                }
    }
}

}  // namespace

void kda_forward(const ForwardContext& ctx, const KdaWeights& w, int64_t il, const float* x, int64_t n,
                 std::span<const SequenceSlice> sequences, float* out) {
    const HParams& hp = ctx.hp;
    const int64_t H = w.n_head, D = w.head_dim, I = H * D, K = hp.conv_kernel;
    const size_t rows = size_t(n * I);
    // A parallel rank's own heads (model/shard.h): their projections computed whole here.
    const ForwardContext heads_ctx = w.n_head_total ? ctx.unsharded() : ctx;

    // 4.1 projections: u = W x, [n][I] each.  4.3 decay-gate input r = W_fb (W_fa x) + dt_bias:
    // [n][I]; beta logits [n][H]; gate z [n][I].  Every product of x in one pass.
    const ScratchArena::Frame frame(ctx.scratch);
    const auto buffer = [&](int64_t floats) { return ctx.scratch.floats(floats); };
    float *const u_q = buffer(rows), *const u_k = buffer(rows), *const u_v = buffer(rows);
    float *const low_rank = buffer(n * w.f_a.rows), *const gate = buffer(rows), *const beta = buffer(n * H);
    float* const z = buffer(rows);
    const kernels::MatmulOutput of_x[] = {{&w.q, u_q, w.q.rows},          {&w.k, u_k, w.k.rows},
                                          {&w.v, u_v, w.v.rows},          {&w.f_a, low_rank, w.f_a.rows},
                                          {&w.beta, beta, w.beta.rows},   {&w.g, z, w.g.rows}};
    heads_ctx.linear_same_input(of_x, x, n);
    heads_ctx.linear(w.f_b, low_rank, n, gate);

    // 4.1 causal conv per sequence (state: the last K-1 pre-conv inputs), then SiLU
    float *const q = buffer(rows), *const k = buffer(rows), *const v = buffer(rows);
    // Per slice, unshared here so that the worker threads write only their own.
    KdaState** const states = ctx.scratch.take<KdaState*>(int64_t(sequences.size()));
    for (size_t is = 0; is < sequences.size(); ++is)
        states[is] = &sequences[is].state->layers[size_t(il)].writable_kda();
    for (size_t is = 0; is < sequences.size(); ++is) {
        const SequenceSlice& s = sequences[is];
        float* conv_state = states[is]->conv.data();  // [3][I][K-1]
        const int64_t part = I * (K - 1);
        capture_conv(s, il, states[is]->conv, {u_q, u_k, u_v}, I, K);
        // (in pieces of channels, each convolved alone)
        ctx.for_each_piece(I, 3 * s.n_tokens * K, [&](int64_t c0, int64_t c1) {
            const auto conv = [&](const float* u, const std::vector<float>& taps, float* state, float* out) {
                kernels::causal_conv(u + s.first * I + c0, I, s.n_tokens, c1 - c0, taps.data() + c0 * K, int(K),
                                     state + c0 * (K - 1), out + s.first * I + c0, I);
            };
            conv(u_q, w.conv_q, conv_state, q);
            conv(u_k, w.conv_k, conv_state + part, k);
            conv(u_v, w.conv_v, conv_state + 2 * part, v);
        });
    }

    // 4.2 q, k: per head x / max(||x||, eps); q also * 1/sqrt(D).  4.3 gate g and beta.
    const float q_scale = 1.0f / std::sqrt(float(D));
    // In (token, head) items, weighed as eight elementwise steps a value (the activations take
    // exponentials): whole tokens left decode's one token to the main thread alone (17 µs a layer).
    ctx.for_each_piece(n * H, 8 * 4 * D, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t t = i / H, h = i % H, first = t * I + h * D;
            kernels::silu(q + first, D, q + first);
            kernels::silu(k + first, D, k + first);
            kernels::silu(v + first, D, v + first);
            kernels::sigmoid(beta + i, 1, beta + i);  // beta is [n][H]
            float* qh = q + first;
            kernels::l2_norm(qh, hp.rms_eps, D, qh);
            for (int64_t d = 0; d < D; ++d) qh[d] *= q_scale;
            float* kh = k + first;
            kernels::l2_norm(kh, hp.rms_eps, D, kh);
            // ssm_a = -A_h.  K3: g = lb * sigmoid(A_h * r);  Kimi-Linear: g = -A_h * softplus(r)
            float* gh = gate + first;
            const float* bias = w.dt_bias.data() + h * D;
            const float A = -w.a[size_t(h)];
            for (int64_t d = 0; d < D; ++d) {
                const float r = gh[d] + bias[d];
                gh[d] = hp.gate_lower_bound ? *hp.gate_lower_bound * kernels::sigmoid(A * r) : -A * softplus(r);
            }
        }
    });

    // 4.4 / 4.5 the delta rule, one task per (sequence, head)
    float* const o = buffer(rows);  // [n][I]
    const int64_t n_tasks = int64_t(sequences.size()) * H;
    const size_t head_scratch_bytes = size_t(kda_scratch_floats(D, kKdaChunk)) * sizeof(float);
    ctx.pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
        const SequenceSlice& s = sequences[size_t(task / H)];
        const int64_t h = task % H;
        const int64_t offset = s.first * I + h * D;
        const KdaHeadRun run{q + offset, k + offset, v + offset, gate + offset, beta + s.first * H + h,
                             I, H, s.n_tokens, D, o + offset, I};
        auto* const scratch = static_cast<float*>(ctx.pool.thread_scratch(thread, head_scratch_bytes));
        float* state = states[size_t(task / H)]->recurrent.data() + h * D * D;
        const bool chunked = ctx.kda_mode == KdaMode::chunked || (ctx.kda_mode == KdaMode::automatic && s.n_tokens > 1);
        // In pieces at the captures (multiples of the chunk, so the chunks are the same).
        int64_t begin = 0;
        for (size_t i = 0; i <= s.capture_at.size(); ++i) {
            const int64_t end = i < s.capture_at.size() ? s.capture_at[i] : s.n_tokens;
            KdaHeadRun piece = run;
            piece.q += begin * run.stride;
            piece.k += begin * run.stride;
            piece.v += begin * run.stride;
            piece.g += begin * run.stride;
            piece.beta += begin * run.beta_stride;
            piece.out += begin * run.out_stride;
            piece.n_tokens = end - begin;
            if (chunked) kda_chunked(piece, state, kKdaChunk, scratch);
            else kda_recurrent(piece, state, scratch);
            if (i < s.capture_at.size())
                std::copy(state, state + D * D, s.captured[i].layers[size_t(il)].kda->recurrent.data() + h * D * D);
            begin = end;
        }
    });

    // 4.6 per-head RMSNorm (shared weight), sigmoid gate, output projection
    ctx.for_each_piece(n, 2 * I, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t)
            for (int64_t h = 0; h < H; ++h) {
                float* oh = o + t * I + h * D;
                kernels::rms_norm(oh, w.norm.data(), hp.rms_eps, D, oh);
            }
        kernels::multiply_sigmoid(z + t0 * I, (t1 - t0) * I, o + t0 * I);
    });
    project_heads(ctx, w.out, o, n, H, w.n_head_total, D, out);
    ctx.emit(layer_name(il, "kda_out"), out, n, hp.n_embd);
}

}  // namespace k3::model
