#include "kernels/matmul.h"

#include <algorithm>
#include <span>
#include <vector>

#include "kernels/activation_quant.h"
#include "kernels/dequant.h"
#include "kernels/dot.h"
#include "kernels/int_dot.h"
#include "kernels/matmul_tile.h"

namespace k3::kernels {

namespace {

// Row tiles sized so every thread gets several tasks (load balance) but a tile still spans
// enough rows to amortize the task hand-out.
int64_t rows_per_task(int64_t rows, int n_threads, int64_t min_rows) {
    const int64_t target_tasks = int64_t(n_threads) * 4;
    return std::max<int64_t>(min_rows, (rows + target_tasks - 1) / target_tasks);
}

void matvec_rows(DotRowFn dot, const MatrixView& w, int64_t first, int64_t last, const float* x, float* y) {
    for (int64_t r = first; r < last; ++r) y[r] = dot(w.row(r), x, w.cols);
}

// The scalar level of the micro-kernel (matmul_tile.h): one-lane "vectors".
struct ScalarLane {
    using F = float;
    using Mask = int;
    static constexpr int kWidth = 1;
    static F zero() { return 0.0f; }
    static F load(const float* p) { return *p; }
    static Mask tail(int64_t) { return 0; }  // never partial: every row length is a multiple of 1
    static F load(const float* p, Mask) { return *p; }
    static F fmadd(F a, F b, F c) { return a * b + c; }
    static float reduce_add(F v) { return v; }
};

// A quarter of a 2 MiB L2: the decoded tile, with room for the token rows streaming past it.
constexpr size_t kTileBytes = size_t(512) << 10;

// Native numerics: every token row rounded once (in parallel for many tokens), then tiles of
// rows, each row dotted with every token while it is in L1. The quantised rows live in a buffer
// of the calling thread that grows to the largest call and is then reused: no allocation per
// call once a forward pass has run.
// Every output's rows in tiles, one task per tile, numbered across the outputs in order.
void matmul_integer(ThreadPool& pool, std::span<const MatmulOutput> outputs, const float* x, int64_t x_stride,
                    int64_t n_tokens) {
    const MatrixView& first_w = *outputs.front().w;
    const ActivationFormat format = activation_format(first_w.type->type);
    const int64_t cols = first_w.cols;
    const size_t act_bytes = activation_row_bytes(format, cols);
    thread_local std::vector<uint8_t> act_rows;
    if (act_rows.size() < act_bytes * size_t(n_tokens)) act_rows.resize(act_bytes * size_t(n_tokens));
    uint8_t* const act = act_rows.data();
    const auto quantize = [&](int64_t t) {
        quantize_activation_row(format, x + t * x_stride, act + size_t(t) * act_bytes, cols, "matmul activations");
    };
    // Prefill: the rows also packed for the AMX tiles where every output has an AMX kernel, else
    // lane-packed for the lane kernels (int_dot.h).
    const bool prefill = n_tokens >= 4;
    const bool amx_packed = prefill && amx_enabled() && std::all_of(outputs.begin(), outputs.end(), [](const MatmulOutput& o) {
        return int_dot_amx_kernel(o.w->type->type) != nullptr;
    });
    const size_t group_bytes = amx_group_bytes(format, cols);
    thread_local std::vector<uint8_t> amx_rows;
    if (amx_packed && amx_rows.size() < group_bytes * size_t((n_tokens + kAmxTokens - 1) / kAmxTokens))
        amx_rows.resize(group_bytes * size_t((n_tokens + kAmxTokens - 1) / kAmxTokens));
    uint8_t* const amx_groups = amx_rows.data();  // the calling thread's buffer, as act
    const bool lane_packed = prefill && !amx_packed && int_dot_lanes_kernel(first_w.type->type);
    const size_t lane_bytes = size_t(act_lane_groups(cols)) * sizeof(ActLaneGroup);
    thread_local std::vector<ActLaneGroup> lane_rows;
    if (lane_packed && lane_rows.size() < size_t(act_lane_groups(cols) * n_tokens))
        lane_rows.resize(size_t(act_lane_groups(cols) * n_tokens));
    ActLaneGroup* const lane_groups = lane_rows.data();  // the calling thread's buffer, as act
    const auto* const lanes = reinterpret_cast<const uint8_t*>(lane_groups);
    const auto prepare = [&](int64_t t) {
        quantize(t);
        if (lane_packed) pack_act_lanes(format, act + size_t(t) * act_bytes, cols, lane_groups + t * act_lane_groups(cols));
    };
    if (amx_packed) {
        pool.parallel_for((n_tokens + kAmxTokens - 1) / kAmxTokens, [&](int64_t g, int) {
            const int64_t t0 = g * kAmxTokens, count = std::min<int64_t>(kAmxTokens, n_tokens - t0);
            for (int64_t t = t0; t < t0 + count; ++t) quantize(t);
            pack_act_amx(format, act + size_t(t0) * act_bytes, act_bytes, count, cols, amx_groups + size_t(g) * group_bytes);
        });
    } else if (n_tokens <= 2) {
        for (int64_t t = 0; t < n_tokens; ++t) prepare(t);
    } else {
        pool.parallel_for(n_tokens, [&](int64_t t, int) { prepare(t); });
    }
    int64_t total_rows = 0, n_tasks = 0;
    for (const MatmulOutput& o : outputs) total_rows += o.w->rows;
    // A multiple of the kernels' row group: four rows for the integer tile kernels
    // (int_dot_simd.h), sixteen for an AMX tile.
    const int64_t row_group = amx_packed ? 16 : 4;
    const int64_t tile = (rows_per_task(total_rows, pool.size(), 16) + row_group - 1) / row_group * row_group;
    for (const MatmulOutput& o : outputs) n_tasks += (o.w->rows + tile - 1) / tile;
    // Token runs whose quantised rows stay in L2 while the task's weight rows pass them.
    // (Whole groups of AMX tokens; all of them × Q8_K, whose kernel keeps its own runs in L1 and
    // decodes each weight panel once per call.)
    const int64_t fitting = int64_t(kTileBytes / act_bytes);
    const int64_t token_run = !amx_packed                     ? std::max<int64_t>(1, fitting)
                              : format == ActivationFormat::q8_K ? n_tokens
                                                                 : std::max<int64_t>(1, fitting / kAmxTokens) * kAmxTokens;
    pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
        size_t k = 0;
        for (int64_t tasks_of_output; task >= (tasks_of_output = (outputs[k].w->rows + tile - 1) / tile); ++k)
            task -= tasks_of_output;
        const MatrixView& w = *outputs[k].w;
        float* const y = outputs[k].y;
        const int64_t y_stride = outputs[k].y_stride;
        const IntDotFn dot = int_dot_kernel(w.type->type);
        const IntDotTileFn dot_tile = int_dot_tile_kernel(w.type->type);
        const IntDotLanesFn dot_lanes = lane_packed ? int_dot_lanes_kernel(w.type->type) : nullptr;
        const IntDotAmxFn dot_amx = amx_packed ? int_dot_amx_kernel(w.type->type) : nullptr;
        const int64_t first = task * tile, last = std::min(w.rows, first + tile);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += token_run) {
            const int64_t tokens = std::min(token_run, n_tokens - t0);
            const uint8_t* run = act + size_t(t0) * act_bytes;
            if (dot_amx) {
                dot_amx(w.row(first), w.row_stride, last - first, amx_groups + size_t(t0 / kAmxTokens) * group_bytes, group_bytes,
                        tokens, cols, y + t0 * y_stride + first, y_stride, pool.thread_scratch(thread, amx_scratch_bytes(format, cols)));
                continue;
            }
            if (dot_lanes) {
                dot_lanes(w.row(first), w.row_stride, last - first, lanes + size_t(t0) * lane_bytes, lane_bytes, tokens, cols,
                          y + t0 * y_stride + first, y_stride);
                continue;
            }
            if (dot_tile) {
                dot_tile(w.row(first), w.row_stride, last - first, run, act_bytes, tokens, cols, y + t0 * y_stride + first, y_stride);
                continue;
            }
            for (int64_t r = first; r < last; ++r)
                for (int64_t t = 0; t < tokens; ++t) y[(t0 + t) * y_stride + r] = dot(w.row(r), run + size_t(t) * act_bytes, cols);
        }
    });
}

// The outputs can share one rounding of the activations: native numerics, an integer kernel
// for every type, one activation format and row width.
bool integer_path(std::span<const MatmulOutput> outputs, Numerics numerics) {
    if (numerics != Numerics::native || outputs.empty()) return false;
    const MatrixView& first = *outputs.front().w;
    for (const MatmulOutput& o : outputs)
        if (!int_dot_kernel(o.w->type->type) || o.w->cols != first.cols ||
            activation_format(o.w->type->type) != activation_format(first.type->type))
            return false;
    return true;
}

}  // namespace

const char* numerics_name(Numerics numerics) { return numerics == Numerics::native ? "native" : "exact"; }

TileProductFn tile_product_kernel(Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    switch (isa) {
        case Isa::scalar: return &simd::TileProduct<ScalarLane, 4, 4>::product;
        case Isa::avx2: return avx2_tile_product();
        case Isa::avx512: return avx512_tile_product();
    }
    return nullptr;
}

void matmul(ThreadPool& pool, const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens,
            float* y, int64_t y_stride, Numerics numerics) {
    if (n_tokens <= 0 || w.rows <= 0) return;
    const MatmulOutput output{&w, y, y_stride};
    if (integer_path(std::span(&output, 1), numerics)) {
        matmul_integer(pool, std::span(&output, 1), x, x_stride, n_tokens);
        return;
    }
    const DotRowFn dot = dot_row_kernel(w.type->type);
    if (n_tokens <= 2) {
        const int64_t tile = rows_per_task(w.rows, pool.size(), 16);
        pool.parallel_for((w.rows + tile - 1) / tile, [&](int64_t task, int) {
            const int64_t first = task * tile, last = std::min(w.rows, first + tile);
            for (int64_t t = 0; t < n_tokens; ++t) matvec_rows(dot, w, first, last, x + t * x_stride, y + t * y_stride);
        });
        return;
    }
    // Several tokens: decode a tile of rows once (f32 weights are used in place) and multiply it
    // with every token by the level's micro-kernel. Tiles are L2-sized, so that the tile stays
    // cached while the token rows stream past it.
    static const TileProductFn product = tile_product_kernel(best_isa());
    const bool is_f32 = w.type->type == tensor::Type::F32;
    const int64_t l2_rows = int64_t(kTileBytes / (size_t(w.cols) * sizeof(float)));
    const int64_t tile = std::max<int64_t>(4, std::min(rows_per_task(w.rows, pool.size(), 4), l2_rows) / 4 * 4);
    // One decode buffer per pool thread, owned by this call: a thread_local buffer in the pool's
    // threads was reported as leaked by LeakSanitizer.
    std::vector<std::vector<float>> scratch_of_thread(is_f32 ? 0 : size_t(pool.size()));
    const tensor::DequantizeRow decode = dequantize_row_kernel(w.type->type);  // SIMD where there is one
    pool.parallel_for((w.rows + tile - 1) / tile, [&](int64_t task, int thread) {
        const int64_t first = task * tile, count = std::min(w.rows, first + tile) - first;
        const float* rows = reinterpret_cast<const float*>(w.row(first));  // [count][cols], stride apart
        int64_t stride = int64_t(w.row_stride / sizeof(float));
        if (!is_f32) {
            std::vector<float>& scratch = scratch_of_thread[size_t(thread)];
            scratch.resize(size_t(count * w.cols));
            for (int64_t r = 0; r < count; ++r) decode(w.row(first + r), scratch.data() + r * w.cols, w.cols);
            rows = scratch.data();
            stride = w.cols;
        }
        product(rows, stride, count, w.cols, x, x_stride, n_tokens, y + first, y_stride);
    });
}

void matmul_same_input(ThreadPool& pool, std::span<const MatmulOutput> outputs, const float* x, int64_t x_stride,
                       int64_t n_tokens, Numerics numerics) {
    if (n_tokens <= 0) return;
    if (integer_path(outputs, numerics)) {
        matmul_integer(pool, outputs, x, x_stride, n_tokens);
        return;
    }
    for (const MatmulOutput& o : outputs) matmul(pool, *o.w, x, x_stride, n_tokens, o.y, o.y_stride, numerics);
}

void matmul_reference(const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
                      int64_t y_stride) {
    const DotRowFn dot = dot_row_kernel(w.type->type, Isa::scalar);
    for (int64_t t = 0; t < n_tokens; ++t) matvec_rows(dot, w, 0, w.rows, x + t * x_stride, y + t * y_stride);
}

}  // namespace k3::kernels
