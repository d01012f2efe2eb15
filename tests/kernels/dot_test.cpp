// Every SIMD dot kernel (and the matmul built on them) against the scalar reference, for each
// weight type and for row lengths that exercise the vector tails.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/dequant.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"

namespace k3::kernels {
namespace {

using tensor::Type;

// A row of n weights of `type`, quantized from random normal values by the type's own encoder.
std::vector<uint8_t> random_row(const tensor::TypeTraits& t, int64_t n, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(static_cast<size_t>(n));
    for (float& v : values) v = normal(rng);
    std::vector<uint8_t> bytes(tensor::row_bytes(t, n));
    t.quantize_row(values.data(), bytes.data(), n);
    return bytes;
}

std::vector<float> random_vector(int64_t n, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    return x;
}

// The exact value of the dot product: decoded weights times x, summed in double.
double exact_dot(const tensor::TypeTraits& t, const uint8_t* row, const float* x, int64_t n) {
    std::vector<float> w(static_cast<size_t>(n));
    t.dequantize_row(row, w.data(), n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(w[size_t(i)]) * x[i];
    return sum;
}

const Type kTypes[] = {Type::F32,  Type::F16,  Type::BF16, Type::Q8_0, Type::MXFP4, Type::Q4_0,
                       Type::Q5_0, Type::Q4_K, Type::Q6_K, Type::IQ4_NL};

TEST(DotKernels, EveryIsaMatchesTheExactDotForEveryType) {
    std::mt19937 rng(1);
    for (Type type : kTypes) {
        const tensor::TypeTraits& t = tensor::traits(type);
        if (!t.dequantize_row || !t.quantize_row) continue;  // not decodable/encodable here yet
        for (int64_t blocks : {1, 2, 3, 7}) {
            const int64_t n = int64_t(t.block_size) * blocks * (t.block_size == 1 ? 37 : 1);  // 37: odd tails
            const std::vector<uint8_t> row = random_row(t, n, rng);
            const std::vector<float> x = random_vector(n, rng);
            const double exact = exact_dot(t, row.data(), x.data(), n);
            for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
                const DotRowFn dot = dot_row_kernel(type, isa);
                if (!isa_supported(isa)) {
                    EXPECT_EQ(dot, nullptr);
                    continue;
                }
                ASSERT_NE(dot, nullptr) << t.name << " " << isa_name(isa);
                // f32 accumulation of n products of unit-scale values: error ~ sqrt(n) ulp.
                EXPECT_NEAR(dot(row.data(), x.data(), n), exact, 1e-5 * double(n))
                    << t.name << " n=" << n << " " << isa_name(isa);
            }
        }
    }
}

TEST(DotKernels, F32PrimitivesHandleEveryTailLength) {
    std::mt19937 rng(2);
    for (int64_t n = 0; n <= 70; ++n) {
        const std::vector<float> a = random_vector(n, rng), b = random_vector(n, rng);
        double exact = 0.0;
        for (int64_t i = 0; i < n; ++i) exact += double(a[size_t(i)]) * b[size_t(i)];
        EXPECT_NEAR(dot_f32(a.data(), b.data(), n), exact, 1e-5) << n;
        std::vector<float> y = b;
        axpy_f32(0.5f, a.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(y[size_t(i)], b[size_t(i)] + 0.5f * a[size_t(i)]);
    }
}

TEST(DotKernels, Mxfp4HalfScaleFollowsGgml) {
    EXPECT_EQ(mxfp4_half_scale(0), std::ldexp(1.0f, -128));  // subnormal, not zero
    EXPECT_EQ(mxfp4_half_scale(1), std::ldexp(1.0f, -127));
    EXPECT_EQ(mxfp4_half_scale(127), 0.5f);
    EXPECT_EQ(mxfp4_half_scale(128), 1.0f);
    EXPECT_EQ(mxfp4_half_scale(254), std::ldexp(1.0f, 126));
}

// The decoders of the one-scale formats (dequant_simple_avx2.cpp) write the traits' values bit
// for bit: every MXFP4 exponent and code (random bytes), F16/BF16 bit patterns that are not NaN
// at lengths with tails, Q8_0 from its encoder.
TEST(DequantizeRowKernel, OneScaleFormatsDecodeExactlyLikeTheirTraits) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> byte(0, 255);
    for (Type type : {Type::F16, Type::BF16, Type::Q8_0, Type::MXFP4}) {
        const tensor::TypeTraits& t = tensor::traits(type);
        for (Isa isa : {Isa::avx2, Isa::avx512}) {
            const tensor::DequantizeRow decode = dequantize_row_kernel(type, isa);
            if (!isa_supported(isa)) continue;
            ASSERT_NE(decode, nullptr);
            EXPECT_NE(decode, t.dequantize_row) << t.name << ": no SIMD decoder";
            for (int64_t n : {int64_t(t.block_size) * 64, int64_t(t.block_size) * 3 + (t.block_size == 1 ? 5 : 0)}) {
                std::vector<uint8_t> bytes(tensor::row_bytes(t, n));
                if (type == Type::Q8_0) {
                    bytes = random_row(t, n, rng);
                } else {
                    for (uint8_t& b : bytes) b = uint8_t(byte(rng));
                    if (type != Type::MXFP4)  // clear NaN patterns: exponent all ones -> all but the top bit
                        for (size_t i = 0; i < bytes.size(); i += 2) {
                            uint16_t h = uint16_t(bytes[i] | bytes[i + 1] << 8);
                            const uint16_t exponent_mask = type == Type::F16 ? 0x7c00 : 0x7f80;
                            if ((h & exponent_mask) == exponent_mask) h = uint16_t(h & ~0x4000);
                            bytes[i] = uint8_t(h);
                            bytes[i + 1] = uint8_t(h >> 8);
                        }
                }
                std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
                decode(bytes.data(), got.data(), n);
                t.dequantize_row(bytes.data(), want.data(), n);
                for (int64_t i = 0; i < n; ++i)
                    ASSERT_EQ(std::bit_cast<uint32_t>(got[size_t(i)]), std::bit_cast<uint32_t>(want[size_t(i)]))
                        << t.name << " " << isa_name(isa) << " n=" << n << " i=" << i;
            }
        }
    }
}

TEST(Matmul, MatchesReferenceForEveryTokenCountRowCountAndType) {
    std::mt19937 rng(3);
    ThreadPool pool(3);
    for (Type type : kTypes) {
        const tensor::TypeTraits& t = tensor::traits(type);
        if (!t.dequantize_row || !t.quantize_row) continue;
        const int64_t cols = 256;
        for (int64_t rows : {1, 37, 133}) {  // one row, odd counts (partial row blocks, tiles)
            std::vector<uint8_t> data;
            for (int64_t r = 0; r < rows; ++r) {
                const std::vector<uint8_t> row = random_row(t, cols, rng);
                data.insert(data.end(), row.begin(), row.end());
            }
            const MatrixView w{&t, data.data(), cols, rows, tensor::row_bytes(t, cols)};
            for (int64_t n_tokens : {1, 2, 3, 7, 9, 13}) {  // odd counts: partial token blocks
                const int64_t x_stride = cols + 5, y_stride = rows + 3;  // strided rows
                const std::vector<float> x = random_vector(n_tokens * x_stride, rng);
                std::vector<float> y(size_t(n_tokens * y_stride), -1.0f), y_ref = y;
                matmul(pool, w, x.data(), x_stride, n_tokens, y.data(), y_stride);
                matmul_reference(w, x.data(), x_stride, n_tokens, y_ref.data(), y_stride);
                for (size_t i = 0; i < y.size(); ++i)
                    ASSERT_NEAR(y[i], y_ref[i], 2e-3) << t.name << " rows=" << rows << " tokens=" << n_tokens << " " << i;
            }
        }
    }
}

// Each level's micro-kernel against the product summed in double, for shapes that leave every
// kind of remainder: rows and tokens not multiples of the register block, columns not multiples
// of the vector width. Padding between the rows of y stays untouched.
TEST(Matmul, EveryLevelsTileProductMatchesTheExactProduct) {
    std::mt19937 rng(4);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        const TileProductFn product = tile_product_kernel(isa);
        if (!isa_supported(isa)) {
            EXPECT_EQ(product, nullptr);
            continue;
        }
        ASSERT_NE(product, nullptr);
        for (int64_t cols : {1, 7, 16, 37, 100}) {
            for (int64_t rows : {1, 3, 4, 5, 9}) {
                for (int64_t n_tokens : {1, 2, 4, 5, 6, 7, 13}) {
                    const int64_t w_stride = cols + 3, x_stride = cols + 5, y_stride = rows + 2;
                    const std::vector<float> w = random_vector(rows * w_stride, rng), x = random_vector(n_tokens * x_stride, rng);
                    std::vector<float> y(size_t(n_tokens * y_stride), -7.0f);
                    product(w.data(), w_stride, rows, cols, x.data(), x_stride, n_tokens, y.data(), y_stride);
                    for (int64_t t = 0; t < n_tokens; ++t) {
                        for (int64_t r = 0; r < y_stride; ++r) {
                            const float got = y[size_t(t * y_stride + r)];
                            if (r >= rows) {
                                ASSERT_EQ(got, -7.0f) << "padding written";
                                continue;
                            }
                            double exact = 0.0;
                            for (int64_t c = 0; c < cols; ++c) exact += double(w[size_t(r * w_stride + c)]) * x[size_t(t * x_stride + c)];
                            ASSERT_NEAR(got, exact, 1e-5 * double(cols))
                                << isa_name(isa) << " cols=" << cols << " rows=" << rows << " tokens=" << n_tokens;
                        }
                    }
                }
            }
        }
    }
}

// Each level's row combinations against that level's axpy_f32 called term by term (bit for bit:
// the same order and rounding, which KDA's replayed prefill relies on) and against the sums in
// double, over shapes that leave every remainder: outputs not a multiple of the register block,
// columns not a multiple of the vectors, full and causal term counts, fresh and accumulated
// outputs. Columns past n and the padding between output rows stay untouched.
TEST(Matmul, EveryLevelsRowCombinationIsItsAxpysInOrder) {
    std::mt19937 rng(5);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        const CombineRowsFn combine = combine_rows_kernel(isa);
        if (!isa_supported(isa)) {
            EXPECT_EQ(combine, nullptr);
            continue;
        }
        ASSERT_NE(combine, nullptr);
        const auto axpy = (isa == Isa::scalar ? scalar_dot_kernels() : isa == Isa::avx2 ? avx2_dot_kernels() : avx512_dot_kernels()).axpy_f32;
        for (int64_t n : {1, 7, 8, 16, 37, 64, 100, 128}) {
            for (int64_t n_out : {1, 5, 6, 7, 13, 16}) {
                for (int64_t n_terms : {0, 1, 4, 16, 33}) {
                    for (int64_t first_terms : {int64_t(-3), int64_t(1), int64_t(3), n_terms}) {
                        for (bool accumulate : {false, true}) {
                            const int64_t coef_stride = n_terms + 2, row_stride = n + 3, y_stride = n + 5;
                            const std::vector<float> coef = random_vector(n_out * coef_stride, rng);
                            const std::vector<float> rows = random_vector(n_terms * row_stride, rng);
                            const std::vector<float> y0 = random_vector(n_out * y_stride, rng);
                            std::vector<float> y = y0, expected = y0;
                            combine(coef.data(), coef_stride, n_out, first_terms, n_terms, rows.data(), row_stride, n, y.data(),
                                    y_stride, accumulate);
                            for (int64_t i = 0; i < n_out; ++i) {
                                float* const out = expected.data() + i * y_stride;
                                if (!accumulate) std::fill(out, out + n, 0.0f);
                                const int64_t terms = std::clamp<int64_t>(first_terms + i, 0, n_terms);
                                for (int64_t k = 0; k < terms; ++k) axpy(coef[size_t(i * coef_stride + k)], rows.data() + k * row_stride, out, n);
                                for (int64_t c = 0; c < n; ++c) {
                                    double exact = accumulate ? y0[size_t(i * y_stride + c)] : 0.0, magnitude = std::abs(exact);
                                    for (int64_t k = 0; k < terms; ++k) {
                                        const double term = double(coef[size_t(i * coef_stride + k)]) * rows[size_t(k * row_stride + c)];
                                        exact += term;
                                        magnitude += std::abs(term);
                                    }
                                    ASSERT_NEAR(y[size_t(i * y_stride + c)], exact, 1e-6 * magnitude + 1e-30);
                                }
                            }
                            for (size_t j = 0; j < y.size(); ++j)
                                ASSERT_EQ(std::bit_cast<uint32_t>(y[j]), std::bit_cast<uint32_t>(expected[j]))
                                    << isa_name(isa) << " n=" << n << " outputs=" << n_out << " terms=" << n_terms
                                    << " first=" << first_terms << " accumulate=" << accumulate << " at " << j;
                        }
                    }
                }
            }
        }
    }
}

}  // namespace
}  // namespace k3::kernels
