#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>
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

// The scalar level of the micro-kernel (matmul_tile.h): one-lane "vectors" that sum in double,
// as the scalar dots do (dot_scalar.cpp says why).
struct ScalarLane {
    using F = double;
    using Mask = int;
    static constexpr int kWidth = 1;
    static F zero() { return 0.0; }
    static F load(const float* p) { return *p; }
    static Mask tail(int64_t) { return 0; }  // never partial: every row length is a multiple of 1
    static F load(const float* p, Mask) { return *p; }
    static F fmadd(F a, F b, F c) { return a * b + c; }
    static float reduce_add(F v) { return float(v); }
};

// A quarter of a 2 MiB L2: the decoded tile, with room for the token rows streaming past it.
constexpr size_t kTileBytes = size_t(512) << 10;

// Native numerics: every group's token rows rounded once (in parallel for prefill), then tiles of
// rows, each row dotted with every token of its group while it is in L1. The quantised rows live
// in buffers of the calling thread that grow to the largest call and are then reused, as do the
// plans below: no allocation per call once a forward pass has run.

// Where one group's rounded rows lie in those buffers and how its tokens are packed.
struct GroupPlan {
    ActivationFormat format;
    int64_t cols = 0;
    size_t act_bytes = 0;     // one rounded row
    size_t act_offset = 0;    // its first row, bytes into the rounded rows
    bool amx_packed = false;  // prefill on AMX tiles: also packed in groups of kAmxTokens tokens
    bool lane_packed = false; // prefill on the lane kernels: also lane-packed
    size_t amx_group_bytes = 0, amx_offset = 0;  // bytes into the AMX groups
    size_t lane_bytes = 0, lane_offset = 0;      // bytes into the lane-packed rows
    int64_t token_run = 0;    // tokens whose rounded rows stay in L2 while a task's rows pass them
    bool rounded_here = true; // false: the same input as an earlier group, whose rows it shares
    int32_t source = -1;      // a group that picks rows (MatmulGroup::rows): where they are rounded
};

// The input that groups picking rows of the same x share: each row they pick rounded (and
// lane-packed where a lane-packed group picks it) once, at its index in the source's buffers,
// then copied to the groups' own rows.
struct Source {
    const float* x;
    int64_t x_stride;
    ActivationFormat format;
    int64_t cols;
    int64_t n_rows = 0;  // the largest row picked + 1
    bool lanes = false;  // a lane-packed group picks rows of it
    size_t act_offset = 0, lane_offset = 0, mark_offset = 0;
};

// One task: rows [first, last) of one output of one group.
struct RowTile {
    uint32_t group, output;
    int64_t first, last;
};

void matmul_integer(ThreadPool& pool, std::span<const MatmulGroup> groups) {
    // The calling thread's buffers, named through references: a task on another pool thread
    // naming a thread_local would see that thread's own.
    thread_local std::vector<GroupPlan> plans_of_caller;
    thread_local std::vector<uint8_t> act_of_caller, amx_of_caller;
    thread_local std::vector<ActLaneGroup> lanes_of_caller;
    thread_local std::vector<RowTile> tiles_of_caller;
    thread_local std::vector<Source> sources_of_caller;
    thread_local std::vector<uint8_t> marks_of_caller;
    thread_local std::vector<std::pair<int32_t, int64_t>> picked_of_caller;
    std::vector<GroupPlan>& plans = plans_of_caller;
    std::vector<Source>& sources = sources_of_caller;
    std::vector<uint8_t>& marks = marks_of_caller;  // per source row: picked
    std::vector<std::pair<int32_t, int64_t>>& picked = picked_of_caller;  // (source, row), each once
    std::vector<uint8_t>& act_rows = act_of_caller;
    std::vector<uint8_t>& amx_rows = amx_of_caller;
    std::vector<ActLaneGroup>& lane_rows = lanes_of_caller;
    std::vector<RowTile>& tiles = tiles_of_caller;
    plans.resize(groups.size());
    sources.clear();
    size_t act_total = 0, amx_total = 0, lane_total = 0;
    bool any_prefill = false;
    for (size_t g = 0; g < groups.size(); ++g) {
        const MatmulGroup& group = groups[g];
        GroupPlan& plan = plans[g];
        const MatrixView& first_w = *group.outputs.front().w;
        plan.format = activation_format(first_w.type->type);
        plan.cols = first_w.cols;
        plan.act_bytes = activation_row_bytes(plan.format, plan.cols);
        // Prefill: the rows also packed for the AMX tiles where every output has an AMX kernel,
        // else lane-packed for the lane kernels (int_dot.h).
        const bool prefill = group.n_tokens >= 4;
        any_prefill |= prefill;
        plan.amx_packed = prefill && amx_enabled() && std::all_of(group.outputs.begin(), group.outputs.end(), [](const MatmulOutput& o) {
            return int_dot_amx_kernel(o.w->type->type) != nullptr;
        });
        plan.lane_packed = prefill && !plan.amx_packed && int_dot_lanes_kernel(first_w.type->type);
        const int64_t fitting = int64_t(kTileBytes / plan.act_bytes);
        // (Whole groups of AMX tokens; all of them × Q8_K, whose kernel keeps its own runs in L1
        // and decodes each weight panel once per call.)
        plan.token_run = !plan.amx_packed                          ? std::max<int64_t>(1, fitting)
                         : plan.format == ActivationFormat::q8_K ? group.n_tokens
                                                                 : std::max<int64_t>(1, fitting / kAmxTokens) * kAmxTokens;
        if (group.rows) {
            const auto same_source = std::find_if(sources.begin(), sources.end(), [&](const Source& source) {
                return source.x == group.x && source.x_stride == group.x_stride && source.format == plan.format &&
                       source.cols == plan.cols;
            });
            plan.source = int32_t(same_source - sources.begin());
            if (same_source == sources.end()) sources.push_back({group.x, group.x_stride, plan.format, plan.cols});
            Source& source = sources[size_t(plan.source)];
            for (int64_t t = 0; t < group.n_tokens; ++t) source.n_rows = std::max(source.n_rows, group.rows[t] + 1);
            source.lanes |= plan.lane_packed;
        }
        // Decode's experts all read the one token row: it is rounded once.
        const auto same_input = !group.rows ? std::find_if(groups.begin(), groups.begin() + std::ptrdiff_t(g), [&](const MatmulGroup& earlier) {
            const GroupPlan& p = plans[size_t(&earlier - groups.data())];
            return earlier.x == group.x && earlier.x_stride == group.x_stride && earlier.n_tokens == group.n_tokens &&
                   p.format == plan.format && p.cols == plan.cols && p.amx_packed == plan.amx_packed &&
                   p.lane_packed == plan.lane_packed && !earlier.rows;
        }) : groups.begin() + std::ptrdiff_t(g);
        if (same_input != groups.begin() + std::ptrdiff_t(g)) {
            const GroupPlan& shared = plans[size_t(same_input - groups.begin())];
            plan.act_offset = shared.act_offset;
            plan.amx_group_bytes = shared.amx_group_bytes;
            plan.amx_offset = shared.amx_offset;
            plan.lane_bytes = shared.lane_bytes;
            plan.lane_offset = shared.lane_offset;
            plan.rounded_here = false;
            continue;
        }
        plan.rounded_here = true;
        plan.act_offset = act_total;
        act_total += plan.act_bytes * size_t(group.n_tokens);
        if (plan.amx_packed) {
            plan.amx_group_bytes = amx_group_bytes(plan.format, plan.cols);
            plan.amx_offset = amx_total;
            amx_total += plan.amx_group_bytes * size_t((group.n_tokens + kAmxTokens - 1) / kAmxTokens);
        }
        if (plan.lane_packed) {
            plan.lane_bytes = size_t(act_lane_groups(plan.cols)) * sizeof(ActLaneGroup);
            plan.lane_offset = lane_total;
            lane_total += plan.lane_bytes * size_t(group.n_tokens);
        }
    }
    size_t marks_total = 0;
    for (Source& source : sources) {
        const size_t act_bytes = activation_row_bytes(source.format, source.cols);
        source.act_offset = act_total;
        act_total += act_bytes * size_t(source.n_rows);
        if (source.lanes) {
            source.lane_offset = lane_total;
            lane_total += size_t(act_lane_groups(source.cols)) * sizeof(ActLaneGroup) * size_t(source.n_rows);
        }
        source.mark_offset = marks_total;
        marks_total += size_t(source.n_rows);
    }
    marks.assign(marks_total, 0);
    picked.clear();
    for (size_t g = 0; g < groups.size(); ++g)
        if (groups[g].rows)
            for (int64_t t = 0; t < groups[g].n_tokens; ++t) {
                const Source& source = sources[size_t(plans[g].source)];
                if (uint8_t& mark = marks[source.mark_offset + size_t(groups[g].rows[t])]; !mark) {
                    mark = 1;
                    picked.emplace_back(plans[g].source, groups[g].rows[t]);
                }
            }
    if (act_rows.size() < act_total) act_rows.resize(act_total);
    if (amx_rows.size() < amx_total) amx_rows.resize(amx_total);
    if (lane_rows.size() * sizeof(ActLaneGroup) < lane_total) lane_rows.resize(lane_total / sizeof(ActLaneGroup));
    uint8_t* const act = act_rows.data();
    uint8_t* const amx = amx_rows.data();
    auto* const lanes = reinterpret_cast<uint8_t*>(lane_rows.data());

    // Jobs in parallel for prefill; a few rows (decode) are cheaper to round here than to hand out.
    const auto run_jobs = [&](int64_t n_jobs, const auto& job) {
        if (!any_prefill || n_jobs <= 2) {
            for (int64_t i = 0; i < n_jobs; ++i) job(i);
        } else {
            pool.parallel_for(n_jobs, [&](int64_t i, int) { job(i); });
        }
    };
    // A group's jobs: one per token, or per group of kAmxTokens tokens for AMX (numbered across
    // the groups, the one of job i found by find_group).
    const auto jobs_of = [&](size_t g) -> int64_t {
        const int64_t n = groups[g].n_tokens;
        return plans[g].amx_packed ? (n + kAmxTokens - 1) / kAmxTokens : n;
    };
    const auto find_group = [&](int64_t& job, const auto& has_jobs) {
        size_t g = 0;
        for (;; ++g)
            if (has_jobs(g)) {
                if (job < jobs_of(g)) return g;
                job -= jobs_of(g);
            }
    };
    const auto rounds_own = [&](size_t g) { return !groups[g].rows && plans[g].rounded_here; };
    const auto picks_rows = [&](size_t g) { return groups[g].rows != nullptr; };
    // Packs a group's rounded rows t0.. (count <= kAmxTokens) as AMX group `job`.
    const auto pack_amx = [&](size_t g, int64_t job, int64_t t0, int64_t count) {
        const GroupPlan& plan = plans[g];
        pack_act_amx(plan.format, act + plan.act_offset + size_t(t0) * plan.act_bytes, plan.act_bytes, count, plan.cols,
                     amx + plan.amx_offset + size_t(job) * plan.amx_group_bytes);
    };
    const auto amx_tokens = [&](size_t g, int64_t job) { return std::min<int64_t>(kAmxTokens, groups[g].n_tokens - job * kAmxTokens); };

    // 1. The rows of the groups that round their own, and each row picked from a source.
    int64_t own_jobs = 0;
    for (size_t g = 0; g < groups.size(); ++g) own_jobs += rounds_own(g) ? jobs_of(g) : 0;
    run_jobs(own_jobs + int64_t(picked.size()), [&](int64_t job) {
        if (job >= own_jobs) {
            const auto [index, row] = picked[size_t(job - own_jobs)];
            const Source& source = sources[size_t(index)];
            const size_t act_bytes = activation_row_bytes(source.format, source.cols);
            uint8_t* rounded = act + source.act_offset + size_t(row) * act_bytes;
            quantize_activation_row(source.format, source.x + row * source.x_stride, rounded, source.cols, "matmul activations");
            if (source.lanes)
                pack_act_lanes(source.format, rounded, source.cols,
                               reinterpret_cast<ActLaneGroup*>(lanes + source.lane_offset) + row * act_lane_groups(source.cols));
            return;
        }
        const size_t g = find_group(job, rounds_own);
        const MatmulGroup& group = groups[g];
        const GroupPlan& plan = plans[g];
        const auto quantize = [&](int64_t t) {
            quantize_activation_row(plan.format, group.x + t * group.x_stride, act + plan.act_offset + size_t(t) * plan.act_bytes,
                                    plan.cols, "matmul activations");
        };
        if (plan.amx_packed) {
            const int64_t count = amx_tokens(g, job);
            for (int64_t t = job * kAmxTokens; t < job * kAmxTokens + count; ++t) quantize(t);
            pack_amx(g, job, job * kAmxTokens, count);
            return;
        }
        quantize(job);
        if (plan.lane_packed)
            pack_act_lanes(plan.format, act + plan.act_offset + size_t(job) * plan.act_bytes, plan.cols,
                           reinterpret_cast<ActLaneGroup*>(lanes + plan.lane_offset + size_t(job) * plan.lane_bytes));
    });
    // 2. The picked rows copied to their groups' own rows (lane-packed ones as packed).
    int64_t pick_jobs = 0;
    for (size_t g = 0; g < groups.size(); ++g) pick_jobs += picks_rows(g) ? jobs_of(g) : 0;
    run_jobs(pick_jobs, [&](int64_t job) {
        const size_t g = find_group(job, picks_rows);
        const GroupPlan& plan = plans[g];
        const Source& source = sources[size_t(plan.source)];
        const int64_t* rows = groups[g].rows;
        const auto copy_rounded = [&](int64_t t) {
            std::memcpy(act + plan.act_offset + size_t(t) * plan.act_bytes, act + source.act_offset + size_t(rows[t]) * plan.act_bytes,
                        plan.act_bytes);
        };
        if (plan.amx_packed) {
            const int64_t count = amx_tokens(g, job);
            for (int64_t t = job * kAmxTokens; t < job * kAmxTokens + count; ++t) copy_rounded(t);
            pack_amx(g, job, job * kAmxTokens, count);
        } else if (plan.lane_packed) {
            std::memcpy(lanes + plan.lane_offset + size_t(job) * plan.lane_bytes,
                        lanes + source.lane_offset + size_t(rows[job]) * plan.lane_bytes, plan.lane_bytes);
        } else {
            copy_rounded(job);
        }
    });

    // Tiles of rows split by bytes, so that every thread gets several tasks of about equal
    // weight (load balance) while a tile still spans enough rows to amortize the task hand-out;
    // a multiple of the kernels' row group: four rows for the integer tile kernels
    // (int_dot_simd.h), sixteen for the lane kernels' panels (int_dot_q8k_simd.h: eight rows a
    // register, sixteen at AVX-512) and for an AMX tile. The last quarter of the bytes goes in
    // tasks a quarter the size, handed out last, so that the threads finish close together: with
    // equal tasks, a thread waited for the other's last one (about an eighth of decode's time at
    // two threads).
    tiles.clear();
    size_t total_bytes = 0;
    for (const MatmulGroup& group : groups)
        for (const MatmulOutput& o : group.outputs) total_bytes += size_t(o.w->rows) * o.w->row_stride;
    const size_t n_tasks = size_t(pool.size()) * 4;
    const size_t task_bytes = (total_bytes + n_tasks - 1) / n_tasks, last_task_bytes = (task_bytes + 3) / 4;
    const size_t tail_from = total_bytes - total_bytes / 4;
    size_t bytes_before = 0;
    for (size_t g = 0; g < groups.size(); ++g)
        for (size_t k = 0; k < groups[g].outputs.size(); ++k) {
            const MatrixView& w = *groups[g].outputs[k].w;
            const int64_t row_group = plans[g].amx_packed || plans[g].lane_packed ? 16 : 4;
            for (int64_t first = 0; first < w.rows;) {
                const size_t bytes = bytes_before < tail_from ? task_bytes : last_task_bytes;
                const int64_t rows = std::max<int64_t>(16, int64_t((bytes + w.row_stride - 1) / w.row_stride));
                const int64_t last = std::min(w.rows, first + (rows + row_group - 1) / row_group * row_group);
                tiles.push_back({uint32_t(g), uint32_t(k), first, last});
                bytes_before += size_t(last - first) * w.row_stride;
                first = last;
            }
        }
    pool.parallel_for(int64_t(tiles.size()), [&](int64_t task, int thread) {
        const RowTile& tile = tiles[size_t(task)];
        const MatmulGroup& group = groups[tile.group];
        const GroupPlan& plan = plans[tile.group];
        const MatrixView& w = *group.outputs[tile.output].w;
        float* const y = group.outputs[tile.output].y;
        const int64_t y_stride = group.outputs[tile.output].y_stride;
        const IntDotFn dot = int_dot_kernel(w.type->type);
        const IntDotTileFn dot_tile = int_dot_tile_kernel(w.type->type);
        const IntDotLanesFn dot_lanes = plan.lane_packed ? int_dot_lanes_kernel(w.type->type) : nullptr;
        const IntDotAmxFn dot_amx = plan.amx_packed ? int_dot_amx_kernel(w.type->type) : nullptr;
        const int64_t first = tile.first, last = tile.last, cols = plan.cols, n_tokens = group.n_tokens;
        const size_t act_bytes = plan.act_bytes;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += plan.token_run) {
            const int64_t tokens = std::min(plan.token_run, n_tokens - t0);
            const uint8_t* run = act + plan.act_offset + size_t(t0) * act_bytes;
            if (dot_amx) {
                dot_amx(w.row(first), w.row_stride, last - first,
                        amx + plan.amx_offset + size_t(t0 / kAmxTokens) * plan.amx_group_bytes, plan.amx_group_bytes, tokens,
                        cols, y + t0 * y_stride + first, y_stride, pool.thread_scratch(thread, amx_scratch_bytes(plan.format, cols)));
                continue;
            }
            if (dot_lanes) {
                dot_lanes(w.row(first), w.row_stride, last - first, lanes + plan.lane_offset + size_t(t0) * plan.lane_bytes,
                          plan.lane_bytes, tokens, cols, y + t0 * y_stride + first, y_stride);
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

// A group's outputs can share one rounding of the activations: native numerics, an integer
// kernel for every type, one activation format and row width.
bool integer_path(const MatmulGroup& group, Numerics numerics) {
    if (numerics != Numerics::native || group.outputs.empty()) return false;
    const MatrixView& first = *group.outputs.front().w;
    for (const MatmulOutput& o : group.outputs)
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

TileProductFn tile_product() {
    static const TileProductFn product = tile_product_kernel(best_isa());
    return product;
}

namespace {

void combine_rows_scalar(const float* coef, int64_t coef_stride, int64_t n_out, int64_t first_terms, int64_t n_terms,
                         const float* rows, int64_t row_stride, int64_t n, float* y, int64_t y_stride, bool accumulate) {
    const auto axpy = scalar_dot_kernels().axpy_f32;
    for (int64_t i = 0; i < n_out; ++i) {
        float* const out = y + i * y_stride;
        if (!accumulate) std::fill(out, out + n, 0.0f);
        const int64_t terms = std::clamp<int64_t>(first_terms + i, 0, n_terms);
        for (int64_t k = 0; k < terms; ++k) axpy(coef[i * coef_stride + k], rows + k * row_stride, out, n);
    }
}

}  // namespace

CombineRowsFn combine_rows_kernel(Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    switch (isa) {
        case Isa::scalar: return &combine_rows_scalar;
        case Isa::avx2: return avx2_combine_rows();
        case Isa::avx512: return avx512_combine_rows();
    }
    return nullptr;
}

CombineRowsFn combine_rows() {
    static const CombineRowsFn combine = combine_rows_kernel(best_isa());
    return combine;
}

void matmul(ThreadPool& pool, const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens,
            float* y, int64_t y_stride, Numerics numerics) {
    if (n_tokens <= 0 || w.rows <= 0) return;
    const MatmulOutput output{&w, y, y_stride};
    const MatmulGroup group{std::span(&output, 1), x, x_stride, n_tokens};
    if (integer_path(group, numerics)) {
        matmul_integer(pool, std::span(&group, 1));
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
    const TileProductFn product = tile_product();
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
    const MatmulGroup group{outputs, x, x_stride, n_tokens};
    matmul_groups(pool, std::span(&group, 1), numerics);
}

void matmul_groups(ThreadPool& pool, std::span<const MatmulGroup> groups, Numerics numerics) {
    // Groups without tokens or outputs have no work; the rest go through one pass when they all
    // take the integer path, else each product on its own.
    thread_local std::vector<MatmulGroup> working;
    working.clear();
    bool all_integer = true;
    for (const MatmulGroup& group : groups)
        if (group.n_tokens > 0 && !group.outputs.empty()) {
            working.push_back(group);
            all_integer &= integer_path(group, numerics);
        }
    if (working.empty()) return;
    if (all_integer) {
        matmul_integer(pool, working);
        return;
    }
    thread_local std::vector<float> picked_rows;
    for (const MatmulGroup& group : working) {
        const float* x = group.x;
        int64_t x_stride = group.x_stride;
        if (group.rows) {
            x_stride = group.outputs.front().w->cols;
            picked_rows.resize(size_t(group.n_tokens * x_stride));
            for (int64_t t = 0; t < group.n_tokens; ++t)
                std::copy(group.x + group.rows[t] * group.x_stride, group.x + group.rows[t] * group.x_stride + x_stride,
                          picked_rows.begin() + t * x_stride);
            x = picked_rows.data();
        }
        for (const MatmulOutput& o : group.outputs) matmul(pool, *o.w, x, x_stride, group.n_tokens, o.y, o.y_stride, numerics);
    }
}

void matmul_reference(const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
                      int64_t y_stride) {
    const DotRowFn dot = dot_row_kernel(w.type->type, Isa::scalar);
    for (int64_t t = 0; t < n_tokens; ++t) matvec_rows(dot, w, 0, w.rows, x + t * x_stride, y + t * y_stride);
}

}  // namespace k3::kernels
