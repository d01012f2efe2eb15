#include "model/model.h"

#include <algorithm>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/vector_ops.h"
#include "model/attn_res.h"
#include "model/expert_source.h"
#include "model/kda.h"
#include "model/mla.h"
#include "model/moe.h"
#include "model/shard.h"
#include "model/situ.h"
#include "util/error.h"

namespace k3::model {

namespace {

uint64_t matrix_bytes(const MatrixView& m) { return uint64_t(m.rows) * m.row_stride; }
uint64_t matrix_bytes(const std::optional<MatrixView>& m) { return m ? matrix_bytes(*m) : 0; }
uint64_t glu_bytes(const GluWeights& g) { return matrix_bytes(g.gate) + matrix_bytes(g.up) + matrix_bytes(g.down); }

// Model::weight_bytes_per_token() of these weights, before any shard().
uint64_t bytes_per_token(const ModelWeights& weights, const HParams& hp) {
    uint64_t bytes = weights.token_embd.row_stride + matrix_bytes(weights.output);
    for (const LayerWeights& layer : weights.layers) {
        if (const auto& k = layer.kda)
            bytes += matrix_bytes(k->q) + matrix_bytes(k->k) + matrix_bytes(k->v) + matrix_bytes(k->f_a) +
                     matrix_bytes(k->f_b) + matrix_bytes(k->beta) + matrix_bytes(k->g) + matrix_bytes(k->out);
        if (const auto& m = layer.mla)
            bytes += matrix_bytes(m->q_a) + matrix_bytes(m->q_b) + matrix_bytes(m->q) + matrix_bytes(m->kv_a) +
                     matrix_bytes(m->k_b) + matrix_bytes(m->v_b) + matrix_bytes(m->gate) + matrix_bytes(m->out);
        if (layer.dense) bytes += glu_bytes(*layer.dense);
        if (const auto& e = layer.moe) {
            const uint64_t experts = matrix_bytes(e->gate_exps) + matrix_bytes(e->up_exps) + matrix_bytes(e->down_exps);
            bytes += experts / uint64_t(hp.n_expert) * uint64_t(hp.n_expert_used);
            bytes += matrix_bytes(e->router) + matrix_bytes(e->routed_down) + matrix_bytes(e->routed_up);
            if (e->shared) bytes += glu_bytes(*e->shared);
        }
    }
    return bytes;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path) {
    std::unique_ptr<Model> model(new Model());
    model->file_ = gguf::GgufFile::open(path);
    model->hp_ = HParams::from_gguf(*model->file_);
    model->weights_ = ModelWeights::bind(*model->file_, model->hp_);
    model->bytes_per_token_ = bytes_per_token(model->weights_, model->hp_);
    return model;
}

Model::~Model() = default;

void Model::shard(int rank, int size, std::span<const double> expert_loads) {
    shard_weights(weights_, hp_, rank, size, expert_loads);
    rank_ = rank;
    n_ranks_ = size;
}

std::vector<int32_t> Model::expert_ranks() const {
    std::vector<int32_t> ranks;
    for (const LayerWeights& layer : weights_.layers)
        if (layer.moe) ranks.insert(ranks.end(), layer.moe->expert_rank.begin(), layer.moe->expert_rank.end());
    return ranks;
}

SequenceState Model::new_state() const {
    SequenceState state;
    state.model = this;
    state.layers.resize(size_t(hp_.n_layer));
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const LayerWeights& layer = weights_.layers[size_t(il)];
        LayerState& layer_state = state.layers[size_t(il)];
        if (!layer.kda) {
            layer_state.mla = PagedRows(hp_.kv_lora_rank + hp_.rope_dim);
            continue;
        }
        const int64_t I = layer.kda->n_head * layer.kda->head_dim, D = layer.kda->head_dim;
        layer_state.kda = std::make_shared<KdaState>();
        layer_state.kda->conv.assign(size_t(3 * I * (hp_.conv_kernel - 1)), 0.0f);
        layer_state.kda->recurrent.assign(size_t(layer.kda->n_head * D * D), 0.0f);
    }
    return state;
}

uint64_t Model::weight_bytes_per_token() const { return bytes_per_token_; }

void check_token_ids(std::span<const int32_t> tokens, int64_t n_vocab) {
    for (int32_t token : tokens)
        if (token < 0 || token >= n_vocab)
            throw Error("token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                        std::to_string(n_vocab) + ")");
}

void Model::forward(kernels::ThreadPool& pool, std::span<const SequenceRequest> requests,
                    const ForwardOptions& options) const {
    const int64_t E = hp_.n_embd, V = hp_.n_vocab;
    std::vector<SequenceSlice> slices;
    int64_t n = 0;
    for (const SequenceRequest& r : requests) {
        if (r.state->model != this) throw Error("forward: a sequence state belongs to another model");
        check_token_ids(r.tokens, V);
        if (r.tokens.empty()) continue;
        SequenceSlice slice{r.state, n, int64_t(r.tokens.size())};
        if (!r.capture_at.empty()) {
            for (size_t i = 0; i < r.capture_at.size(); ++i)
                if (r.capture_at[i] <= (i ? r.capture_at[i - 1] : 0) || r.capture_at[i] >= slice.n_tokens ||
                    r.capture_at[i] % kKdaChunk != 0)
                    throw Error("forward: capture positions must be multiples of the KDA chunk (" +
                                std::to_string(kKdaChunk) + ") ascending strictly inside the tokens");
            r.captured->assign(r.capture_at.size(), SequenceState{});
            for (size_t i = 0; i < r.capture_at.size(); ++i) {
                SequenceState& captured = (*r.captured)[i];
                captured.model = this;
                captured.position = r.state->position + r.capture_at[i];
                captured.layers.resize(r.state->layers.size());
                for (size_t il = 0; il < captured.layers.size(); ++il)  // written by kda_forward
                    if (const auto& kda = r.state->layers[il].kda)
                        captured.layers[il].kda = std::make_shared<KdaState>(
                            KdaState{std::vector<float>(kda->conv.size()), std::vector<float>(kda->recurrent.size())});
            }
            slice.capture_at = r.capture_at;
            slice.captured = r.captured->data();
        }
        slices.push_back(slice);
        n += int64_t(r.tokens.size());
    }
    if (n == 0) return;
    MappedExperts mapped_experts(weights_);
    // The observer names weights by their address in the mapped file, resident trunk or not.
    MatmulObserver observe_in_file;
    if (options.observe && !trunk_copies_.empty())
        observe_in_file = [&](const kernels::MatrixView& w, const float* x, int64_t x_stride, int64_t rows) {
            kernels::MatrixView in_file = w;
            in_file.data = mapped_address(w.data);
            options.observe(in_file, x, x_stride, rows);
        };
    const MatmulObserver* observe = observe_in_file ? &observe_in_file : options.observe ? &options.observe : nullptr;
    // The calling thread's buffers, kept for its next passes.
    thread_local ScratchArena scratch_of_caller;
    thread_local MoeScratch moe_of_caller;
    const ScratchArena::Frame frame(scratch_of_caller);
    moe_of_caller.reserve(hp_, n);
    const ForwardContext ctx{hp_,
                             pool,
                             scratch_of_caller,
                             moe_of_caller,
                             options.kda_mode,
                             options.dump ? &options.dump : nullptr,
                             options.experts ? options.experts : &mapped_experts,
                             options.numerics,
                             options.collective,
                             observe};

    // 3.2.1 inpL = token embeddings: [n][E]
    const auto rows_of_embd = [&] { return ctx.scratch.floats(n * E); };
    float* partial = rows_of_embd();
    {
        int64_t t = 0;
        for (const SequenceRequest& r : requests)
            for (int32_t token : r.tokens) {
                weights_.token_embd.type->dequantize_row(weights_.token_embd.row(token), partial + t * E, E);
                ++t;
            }
    }
    ctx.emit("inp_embd", partial, n, E);
    BlockStack stack;
    stack.snapshots.reserve(size_t(hp_.attn_res_block_size > 0 ? hp_.n_layer / hp_.attn_res_block_size + 1 : 0));
    float* const mixed = rows_of_embd();
    float* const normed = rows_of_embd();
    float* sublayer = rows_of_embd();
    const auto norm_mixed = [&](const std::vector<float>& weight) {
        ctx.for_each_piece(n, E, [&](int64_t first, int64_t last) {
            for (int64_t t = first; t < last; ++t)
                kernels::rms_norm(mixed + t * E, weight.data(), hp_.rms_eps, E, normed + t * E);
        });
    };
    const auto add_sublayer = [&] {
        ctx.for_each_piece(n * E, 1, [&](int64_t first, int64_t last) {
            for (int64_t i = first; i < last; ++i) partial[i] += sublayer[i];
        });
    };
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const LayerWeights& layer = weights_.layers[size_t(il)];
        // 3.2.2-3 x = Mix(P, stack); bank the raw layer input every block_size layers
        attn_res_mix(ctx, stack, partial, layer.attn_res_score, n, mixed);
        const bool banked = hp_.attn_res_block_size > 0 && il % hp_.attn_res_block_size == 0;
        // 3.2.4-5 a = Mixer(RMSNorm(x)); P = a if banked, else P + a
        norm_mixed(layer.attn_norm);
        ctx.emit(layer_name(il, "attn_norm"), normed, n, E);
        if (layer.kda) kda_forward(ctx, *layer.kda, il, normed, n, slices, sublayer);
        else mla_forward(ctx, *layer.mla, il, normed, n, slices, sublayer);
        if (banked) {
            // The stack keeps the raw layer input's rows; P continues in a's.
            stack.snapshots.push_back(partial);
            partial = sublayer;
            sublayer = rows_of_embd();
        } else {
            add_sublayer();
        }
        ctx.emit(layer_name(il, "prefix_sum_attn"), partial, n, E);
        // 3.2.6-8 f = FFN(RMSNorm(Mix(P, stack))); P = P + f
        attn_res_mix(ctx, stack, partial, layer.ffn_res_score, n, mixed);
        norm_mixed(layer.ffn_norm);
        ctx.emit(layer_name(il, "ffn_norm"), normed, n, E);
        if (layer.dense) situ_glu(ctx, *layer.dense, normed, n, sublayer);
        else moe_forward(ctx, *layer.moe, il, normed, n, sublayer);
        ctx.emit(layer_name(il, "ffn_out"), sublayer, n, E);
        add_sublayer();
        ctx.emit(layer_name(il, "l_out"), partial, n, E);
    }
    // 3.3 final mix; keep only the rows whose logits are wanted; 8. norm and head
    attn_res_mix(ctx, stack, partial, weights_.output_res_score, n, mixed);
    std::vector<int64_t> wanted;
    for (const SequenceSlice& s : slices) {
        const bool all = std::find_if(requests.begin(), requests.end(), [&](const SequenceRequest& r) {
                             return r.state == s.state;
                         })->all_logits;
        for (int64_t i = all ? 0 : s.n_tokens - 1; i < s.n_tokens; ++i) wanted.push_back(s.first + i);
    }
    const int64_t n_wanted = int64_t(wanted.size());
    float* const final_rows = ctx.scratch.floats(n_wanted * E);
    float* const logits = ctx.scratch.floats(n_wanted * V);
    for (int64_t i = 0; i < n_wanted; ++i)
        kernels::rms_norm(mixed + wanted[size_t(i)] * E, weights_.output_norm.data(), hp_.rms_eps, E,
                          final_rows + i * E);
    ctx.emit("result_norm", final_rows, n_wanted, E);
    if (options.logits_on_root_only)
        ctx.linear_to_root(weights_.output, final_rows, n_wanted, logits);
    else
        ctx.linear(weights_.output, final_rows, n_wanted, logits);
    ctx.emit("result_output", logits, n_wanted, V);
    const bool has_logits = !options.collective || !options.logits_on_root_only || options.collective->rank() == 0;
    size_t row = 0;
    for (const SequenceRequest& r : requests) {
        if (r.tokens.empty()) continue;
        const size_t rows = r.all_logits ? r.tokens.size() : 1;
        if (has_logits)
            std::copy(logits + row * size_t(V), logits + (row + rows) * size_t(V), r.logits);
        row += rows;
        // The MLA cache up to a capture is a prefix of the pass's (its last page shared, copied
        // by whichever side writes to it first).
        for (size_t i = 0; i < r.capture_at.size(); ++i)
            for (size_t il = 0; il < r.state->layers.size(); ++il)
                if (!r.state->layers[il].kda) {
                    PagedRows& mla = (*r.captured)[i].layers[il].mla;
                    mla = r.state->layers[il].mla;
                    mla.truncate(r.state->position + r.capture_at[i]);
                }
        r.state->position += int64_t(r.tokens.size());
    }
}

}  // namespace k3::model
