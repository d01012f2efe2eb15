// Products of a weight matrix (any type with a dot kernel) with f32 activation rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/isa.h"
#include "kernels/thread_pool.h"
#include "tensor/tensor_type.h"

namespace k3::kernels {

// A row-major weight matrix in its stored type: `rows` rows of `cols` elements, each row
// `row_stride` bytes apart (a view into the mapped file; ggml ne = [cols, rows]).
struct MatrixView {
    const tensor::TypeTraits* type = nullptr;
    const uint8_t* data = nullptr;
    int64_t cols = 0;
    int64_t rows = 0;
    size_t row_stride = 0;

    const uint8_t* row(int64_t r) const { return data + size_t(r) * row_stride; }
    // Rows [first, first + count) as a matrix of their own.
    MatrixView row_range(int64_t first, int64_t count) const {
        return {type, row(first), cols, count, row_stride};
    }
};

// How products with quantised weights treat the activations.
//   native: as llama.cpp's CPU backend does: each activation row rounded once to the weight
//           type's activation format (activation_quant.h), then integer dots (int_dot.h). Types
//           without an integer kernel (F32, F16, BF16; the K-quants until theirs exist) keep f32.
//   exact:  f32 activations times the decoded weights (the numerics of the f32act references).
enum class Numerics { native, exact };
const char* numerics_name(Numerics numerics);

// Y[t][r] = sum_c W[r][c] * X[t][c]   for t < n_tokens, r < W.rows.
// X rows are x_stride floats apart, Y rows y_stride floats apart; Y is overwritten.
// Exact numerics: one or two tokens take each row through the type's dot kernel (memory bound);
// more decode a tile of rows once to f32 and multiply it with all tokens by a register-blocked
// micro-kernel. Native numerics with an integer kernel: the token rows are quantised once, then
// each row's integer dot with every token (the row stays in L1 while the tokens pass).
void matmul(ThreadPool& pool, const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens,
            float* y, int64_t y_stride, Numerics numerics = Numerics::exact);

// Products of several matrices with the same activations (an expert's gate and up): each
// output gets exactly matmul's result, but under native numerics the activation rows are
// rounded once and one parallel pass covers every matrix's rows.
struct MatmulOutput {
    const MatrixView* w;
    float* y;          // [n_tokens][w->rows], rows y_stride floats apart
    int64_t y_stride;
};
void matmul_same_input(ThreadPool& pool, std::span<const MatmulOutput> outputs, const float* x, int64_t x_stride,
                       int64_t n_tokens, Numerics numerics);

// Products of several inputs, each with its own matrices (a MoE layer's active experts: each
// expert's gate and up read its tokens' rows): every output gets exactly matmul's result, and
// under native numerics one parallel pass covers every group's rows, split by bytes, each input
// rounded once (groups with the same x share one rounding; groups that pick rows of the same x,
// one rounding of each row they pick).
struct MatmulGroup {
    std::span<const MatmulOutput> outputs;
    const float* x;  // [n_tokens] rows x_stride floats apart, or the rows `rows` picks
    int64_t x_stride;
    int64_t n_tokens;
    const int64_t* rows = nullptr;  // non-null: token t is row rows[t] of x
};
void matmul_groups(ThreadPool& pool, std::span<const MatmulGroup> groups, Numerics numerics);

// The same product on the calling thread with scalar kernels only: the test reference.
void matmul_reference(const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
                      int64_t y_stride);

// The multi-token product of a decoded f32 tile (matmul_tile.h, per level):
//   y[t][r] = sum_c w[r][c] * x[t][c]   for r < rows, t < n_tokens, c < cols.
// w: [rows][cols] rows w_stride floats apart; x: [n_tokens][cols] rows x_stride apart;
// y: [n_tokens][rows] rows y_stride apart, overwritten.
using TileProductFn = void (*)(const float* w, int64_t w_stride, int64_t rows, int64_t cols, const float* x,
                               int64_t x_stride, int64_t n_tokens, float* y, int64_t y_stride);

// The kernel of `isa`; null if this CPU lacks it.
TileProductFn tile_product_kernel(Isa isa);
// The best level's kernel (best_isa(), so K3_ISA caps it), looked up once.
TileProductFn tile_product();
TileProductFn avx2_tile_product();    // matmul_avx2.cpp
TileProductFn avx512_tile_product();  // matmul_avx512.cpp

// Linear combinations of rows, Y (+)= C · B with B in its natural layout:
//   y[i] (+)= sum_{k < terms(i)} coef[i][k] * rows[k]   for i < n_out, over n columns,
// terms(i) = clamp(first_terms + i, 0, n_terms): first_terms = n_terms for a full product, 1 for
// a causal one (output i takes terms 0..i), less (down to none) for a slice of the terms that
// the first outputs precede. coef: [n_out][n_terms] rows coef_stride floats apart; rows:
// [n_terms][n] row_stride apart; y: [n_out][n] y_stride apart, overwritten or, where
// `accumulate`, added to. Each output element takes its terms in ascending order with the
// rounding of axpy_f32 at the same level (the reference is those axpys), so a sequence of axpys
// becomes one register-blocked call with the same result.
using CombineRowsFn = void (*)(const float* coef, int64_t coef_stride, int64_t n_out, int64_t first_terms,
                               int64_t n_terms, const float* rows, int64_t row_stride, int64_t n, float* y,
                               int64_t y_stride, bool accumulate);
// The kernel of `isa`; null if this CPU lacks it.
CombineRowsFn combine_rows_kernel(Isa isa);
// The best level's kernel, looked up once.
CombineRowsFn combine_rows();
CombineRowsFn avx2_combine_rows();    // matmul_avx2.cpp
CombineRowsFn avx512_combine_rows();  // matmul_avx512.cpp

}  // namespace k3::kernels
