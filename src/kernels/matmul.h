// Products of a weight matrix (any type with a dot kernel) with f32 activation rows.
#pragma once

#include <cstddef>
#include <cstdint>

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

// Y[t][r] = sum_c W[r][c] * X[t][c]   for t < n_tokens, r < W.rows.
// X rows are x_stride floats apart, Y rows y_stride floats apart; Y is overwritten.
// One token: each row through the type's dot kernel (memory bound). Several: a tile of rows is
// dequantized once to f32 and reused for every token.
void matmul(ThreadPool& pool, const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens,
            float* y, int64_t y_stride);

// The same product on the calling thread with scalar kernels only: the test reference.
void matmul_reference(const MatrixView& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
                      int64_t y_stride);

}  // namespace k3::kernels
