// The multi-token matmul's inner product: an f32 tile of weight rows (decoded once) times a run
// of token rows. Written once over a vector type V (matmul.cpp's scalar one, simd_avx2.h,
// simd_avx512.h) as a register-blocked micro-kernel: kRows × kTokens accumulators, so that each
// weight vector loaded feeds kTokens FMAs and each activation vector kRows. SIMD levels include
// this header inside their target region (see simd_avx2.h); the kernels' declarations are in
// matmul.h.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

namespace k3::kernels::simd {

template <class V, int kRows, int kTokens>
struct TileProduct {
    using F = typename V::F;
    using BlockFn = void (*)(const float* w, int64_t w_stride, const float* x, int64_t x_stride, int64_t cols, float* y,
                             int64_t y_stride, bool accumulate);

    // An R × T block (R <= kRows, T <= kTokens) over `cols` columns: accumulators stay in
    // registers across the run; y = the sums, or y += them when `accumulate`.
    template <int R, int T>
    static void block(const float* w, int64_t w_stride, const float* x, int64_t x_stride, int64_t cols, float* y,
                      int64_t y_stride, bool accumulate) {
        F acc[R][T];
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) acc[r][t] = V::zero();
        const auto step = [&](int64_t c, auto load) {
            F xv[T];
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t) xv[t] = load(x + t * x_stride + c);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const F wv = load(w + r * w_stride + c);
#pragma GCC unroll 16
                for (int t = 0; t < T; ++t) acc[r][t] = V::fmadd(wv, xv[t], acc[r][t]);
            }
        };
        int64_t c = 0;
        for (; c + V::kWidth <= cols; c += V::kWidth) step(c, [&](const float* p) { return V::load(p); });
        if (c < cols) {
            const typename V::Mask m = V::tail(cols - c);
            step(c, [m](const float* p) { return V::load(p, m); });
        }
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) {
                const float sum = V::reduce_add(acc[r][t]);
                y[t * y_stride + r] = accumulate ? y[t * y_stride + r] + sum : sum;
            }
    }

    template <int R, size_t... Ts>
    static constexpr std::array<BlockFn, kTokens> blocks_of_rows(std::index_sequence<Ts...>) {
        return {&block<R, int(Ts) + 1>...};
    }
    template <size_t... Rs>
    static constexpr std::array<std::array<BlockFn, kTokens>, kRows> all_blocks(std::index_sequence<Rs...>) {
        return {blocks_of_rows<int(Rs) + 1>(std::make_index_sequence<kTokens>())...};
    }

    // Columns in runs of kColumnRun, then token groups: kTokens activation runs (16-32 KiB)
    // stay in L1 while the tile's run of every row streams past from L2.
    static void product(const float* w, int64_t w_stride, int64_t rows, int64_t cols, const float* x, int64_t x_stride,
                        int64_t n_tokens, float* y, int64_t y_stride) {
        static constexpr auto kBlocks = all_blocks(std::make_index_sequence<kRows>());
        constexpr int64_t kColumnRun = 1024;
        for (int64_t c0 = 0; c0 < cols; c0 += kColumnRun) {
            const int64_t run = cols - c0 < kColumnRun ? cols - c0 : kColumnRun;
            for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokens) {
                const int64_t tokens = n_tokens - t0 < kTokens ? n_tokens - t0 : kTokens;
                for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
                    const int64_t block_rows = rows - r0 < kRows ? rows - r0 : kRows;
                    kBlocks[size_t(block_rows - 1)][size_t(tokens - 1)](w + r0 * w_stride + c0, w_stride,
                                                                         x + t0 * x_stride + c0, x_stride, run,
                                                                         y + t0 * y_stride + r0, y_stride, c0 > 0);
                }
            }
        }
    }
};

}  // namespace k3::kernels::simd
