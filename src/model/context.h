// What every layer function of a forward pass needs besides its weights: the hyper-parameters,
// the thread pool, the KDA path choice and the intermediate dumper.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "model/hparams.h"

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

struct ForwardContext {
    const HParams& hp;
    kernels::ThreadPool& pool;
    KdaMode kda_mode = KdaMode::automatic;
    const DumpFn* dump = nullptr;
    ExpertSource* experts = nullptr;  // routed experts' weights (model/expert_source.h)
    // Of every product with a quantised weight (kernels::Numerics). A context built by hand
    // computes the plain f32 definition; Model::forward passes ForwardOptions::numerics.
    kernels::Numerics numerics = kernels::Numerics::exact;
    MoeScratch* moe = nullptr;  // moe_forward's buffers for the pass (null: it makes its own)

    // y[t] = W x[t] for n contiguous rows (x rows W.cols apart, y rows W.rows apart).
    void linear(const kernels::MatrixView& w, const float* x, int64_t n, float* y) const {
        kernels::matmul(pool, w, x, w.cols, n, y, w.rows, numerics);
    }
    // Every output's y = W x for the same n rows of x (W.cols apart) in one pass over x
    // (kernels::matmul_same_input: x rounded once, one hand-off to the threads).
    void linear_same_input(std::span<const kernels::MatmulOutput> outputs, const float* x, int64_t n) const {
        kernels::matmul_same_input(pool, outputs, x, outputs.front().w->cols, n, numerics);
    }
    // gate[t] = W_gate x[t] and up[t] = W_up x[t] in one pass over x.
    void linear_pair(const kernels::MatrixView& w_gate, const kernels::MatrixView& w_up, const float* x, int64_t n,
                     float* gate, float* up) const {
        const kernels::MatmulOutput outputs[] = {{&w_gate, gate, w_gate.rows}, {&w_up, up, w_up.rows}};
        linear_same_input(outputs, x, n);
    }
    void emit(const std::string& name, const float* data, int64_t rows, int64_t cols) const {
        if (dump && *dump) (*dump)(name, data, rows, cols);
    }
};

inline std::string layer_name(int64_t il, const char* what) { return "blk." + std::to_string(il) + "." + what; }

}  // namespace k3::model
