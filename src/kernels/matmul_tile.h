// The multi-token matmul's inner product: an f32 tile of weight rows (decoded once) times a run
// of token rows. Written once over a vector type V (matmul.cpp's scalar one, simd_avx2.h,
// simd_avx512.h) as a register-blocked micro-kernel: kRows × kTokens accumulators, so that each
// weight vector loaded feeds kTokens FMAs and each activation vector kRows. SIMD levels include
// this header inside their target region (see simd_avx2.h); the kernels' declarations are in
// matmul.h.
#pragma once

#include <algorithm>
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

// Linear combinations of rows (matmul.h, CombineRowsFn): kRows outputs × kVecs vectors of
// columns in registers, so that each term's row vectors feed kRows FMAs and each coefficient,
// broadcast, kVecs. Every output element takes its terms in ascending order, one FMA each: the
// arithmetic of as many axpys.
template <class V, int kRows, int kVecs>
struct RowCombination {
    using F = typename V::F;
    using BlockFn = void (*)(const float* coef, int64_t coef_stride, int64_t first_terms, int64_t n_terms,
                             const float* rows, int64_t row_stride, const typename V::Mask* masks, float* y,
                             int64_t y_stride, bool accumulate);

    // R outputs (coefficient rows) over one run of kVecs vectors, lanes past the columns masked
    // where kMasked; output r takes terms [0, clamp(first_terms + r, 0, n_terms)).
    template <int R, bool kMasked>
    static void block(const float* coef, int64_t coef_stride, int64_t first_terms, int64_t n_terms, const float* rows,
                      int64_t row_stride, const typename V::Mask* masks, float* y, int64_t y_stride, bool accumulate) {
        const auto load = [masks](const float* p, int v) __attribute__((always_inline)) {
            if constexpr (kMasked) return V::load(p, masks[v]);
            else return V::load(p);
        };
        F acc[R][kVecs];
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < kVecs; ++v) acc[r][v] = accumulate ? load(y + r * y_stride + v * V::kWidth, v) : V::zero();
        const auto term = [&](int64_t k, auto takes) __attribute__((always_inline)) {
            F b[kVecs];
#pragma GCC unroll 16
            for (int v = 0; v < kVecs; ++v) b[v] = load(rows + k * row_stride + v * V::kWidth, v);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                if (!takes(r)) continue;
                const F c = V::set1(coef[r * coef_stride + k]);
#pragma GCC unroll 16
                for (int v = 0; v < kVecs; ++v) acc[r][v] = V::fmadd(c, b[v], acc[r][v]);
            }
        };
        // Terms every output of the block takes, then the outputs' ragged ends.
        const int64_t common = std::clamp<int64_t>(first_terms, 0, n_terms);
        const int64_t last = std::clamp<int64_t>(first_terms + R - 1, 0, n_terms);
        for (int64_t k = 0; k < common; ++k) term(k, [](int) { return true; });
        for (int64_t k = common; k < last; ++k) term(k, [&](int r) { return k < first_terms + r; });
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < kVecs; ++v) {
                if constexpr (kMasked) V::store(y + r * y_stride + v * V::kWidth, acc[r][v], masks[v]);
                else V::store(y + r * y_stride + v * V::kWidth, acc[r][v]);
            }
    }

    template <bool kMasked, size_t... Rs>
    static constexpr std::array<BlockFn, kRows> blocks(std::index_sequence<Rs...>) {
        return {&block<int(Rs) + 1, kMasked>...};
    }

    static void combine(const float* coef, int64_t coef_stride, int64_t n_out, int64_t first_terms, int64_t n_terms,
                        const float* rows, int64_t row_stride, int64_t n, float* y, int64_t y_stride, bool accumulate) {
        static constexpr auto kFull = blocks<false>(std::make_index_sequence<kRows>());
        static constexpr auto kPartial = blocks<true>(std::make_index_sequence<kRows>());
        constexpr int64_t kRun = int64_t(kVecs) * V::kWidth;
        typename V::Mask masks[kVecs];
        for (int64_t c0 = 0; c0 < n; c0 += kRun) {
            const bool partial = n - c0 < kRun;
            if (partial)
                for (int v = 0; v < kVecs; ++v) masks[v] = V::tail(std::clamp<int64_t>(n - c0 - v * V::kWidth, 0, V::kWidth));
            for (int64_t r0 = 0; r0 < n_out; r0 += kRows) {
                const int64_t count = std::min<int64_t>(kRows, n_out - r0);
                (partial ? kPartial : kFull)[size_t(count - 1)](coef + r0 * coef_stride, coef_stride, first_terms + r0,
                                                                n_terms, rows + c0, row_stride, masks,
                                                                y + r0 * y_stride + c0, y_stride, accumulate);
            }
        }
    }
};

}  // namespace k3::kernels::simd
