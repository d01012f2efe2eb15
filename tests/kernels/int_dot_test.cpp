// Integer-activation numerics: the activation quantisers round as llama.cpp's x86 build does
// (hand-worked blocks) and every SIMD level writes the scalar reference's bytes; every integer
// kernel equals its scalar reference bit for bit at each level the CPU has (int_dot.h defines
// the arithmetic, including the float-combination order) and the reference is the dot product
// of the decoded weights with the decoded activations.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/activation_quant.h"
#include "kernels/int_dot.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "support/test_support.h"
#include "tensor/float_formats.h"
#include "util/error.h"

namespace k3::kernels {
namespace {

constexpr int64_t kZooCols = 512, kZooRows = 64;
const ActivationFormat kFormats[] = {ActivationFormat::q8_0, ActivationFormat::q8_1, ActivationFormat::q8_K};
const char* const kIntTypes[] = {"Q8_0", "MXFP4", "Q4_0", "Q5_0", "IQ4_NL", "Q4_1", "Q5_1"};

std::vector<Isa> simd_levels() {
    std::vector<Isa> levels;
    for (Isa isa : {Isa::avx2, Isa::avx512})
        if (isa_supported(isa)) levels.push_back(isa);
    return levels;
}

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

std::vector<float> read_f32(const std::string& path) {
    const std::vector<uint8_t> bytes = testing::read_bytes(path);
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), values.size() * 4);
    return values;
}

// Rows with the cases that matter for rounding: a zero block, exact ties (x · id = k + 0.5),
// the signed maximum repeated, wide and tiny magnitudes.
std::vector<float> test_row(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = normal(rng) * std::ldexp(1.0f, int(rng() % 20) - 12);
    for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) x[size_t(i)] = 0.0f;
    if (n >= 64)
        for (int64_t i = 32; i < 64; ++i) x[size_t(i)] = i == 32 ? -127.0f : float(i - 48) + 0.5f;  // id = 1: ties
    if (n >= 512) x[300] = x[301] = -x[302] - 1e6f, x[302] = -x[300];  // |max| twice, opposite signs
    return x;
}

TEST(ActivationQuant, Q8_0RoundsHalfToEvenWithTheX86Reciprocal) {
    std::vector<float> x(32, 0.0f);
    x[0] = 127.0f, x[1] = -63.5f, x[2] = 0.5f, x[3] = 1.5f, x[4] = 2.5f, x[5] = -2.5f, x[6] = 126.49f;
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        if (!isa_supported(isa)) continue;
        ActBlockQ8_1 b1;
        ActBlockQ8_0 b0;
        activation_quantizer(ActivationFormat::q8_0, isa)(x.data(), &b0, 32);
        activation_quantizer(ActivationFormat::q8_1, isa)(x.data(), &b1, 32);
        const int8_t want[7] = {127, -64, 0, 2, 2, -2, 126};
        for (int j = 0; j < 7; ++j) {
            EXPECT_EQ(b0.qs[j], want[j]) << isa_name(isa) << " element " << j;
            EXPECT_EQ(b1.qs[j], want[j]) << isa_name(isa) << " element " << j;
        }
        EXPECT_EQ(b0.d, 0x3c00) << isa_name(isa);  // 127 / 127 = 1
        EXPECT_EQ(b1.s, tensor::f32_to_f16(127 - 64 + 2 + 2 - 2 + 126)) << isa_name(isa);
    }
}

TEST(ActivationQuant, Q8_KScalesBySignedMaximum) {
    std::vector<float> x(256, 0.0f);
    x[0] = 1.0f, x[1] = -2.0f, x[2] = -1.0f, x[17] = 2.0f;  // first of largest magnitude: -2
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        if (!isa_supported(isa)) continue;
        ActBlockQ8_K b;
        activation_quantizer(ActivationFormat::q8_K, isa)(x.data(), &b, 256);
        // iscale = -127 / -2 = 63.5: 1 -> 63.5 -> 64 (even), -2 -> -127, 2 -> 127.
        EXPECT_EQ(b.qs[0], 64) << isa_name(isa);
        EXPECT_EQ(b.qs[1], -127) << isa_name(isa);
        EXPECT_EQ(b.qs[2], -64) << isa_name(isa);
        EXPECT_EQ(b.qs[17], 127) << isa_name(isa);
        EXPECT_EQ(b.bsums[0], 64 - 127 - 64) << isa_name(isa);
        EXPECT_EQ(b.bsums[1], 127) << isa_name(isa);
        EXPECT_EQ(bits_of(b.d), bits_of(1.0f / 63.5f)) << isa_name(isa);
    }
}

TEST(ActivationQuant, SimdLevelsWriteTheScalarBytes) {
    for (ActivationFormat format : kFormats) {
        const int64_t n = 4096;
        const std::vector<float> x = test_row(n, 5);
        std::vector<uint8_t> want(activation_row_bytes(format, n)), got(want.size());
        activation_quantizer(format, Isa::scalar)(x.data(), want.data(), n);
        for (Isa isa : simd_levels()) {
            std::fill(got.begin(), got.end(), 0xAB);
            activation_quantizer(format, isa)(x.data(), got.data(), n);
            EXPECT_EQ(got, want) << activation_format_name(format) << " at " << isa_name(isa);
        }
    }
}

// Both packers lay a row out as int_dot.h's ActLaneGroup says (checked against the blocks
// themselves: a Q8_K block's 32-value runs as its group's eight blocks), and AVX2's writes the
// reference's bytes, with rows that end inside a group.
TEST(ActivationQuant, LanePackersWriteTheGroupLayout) {
    for (ActivationFormat format : kFormats) {
        const bool q8_K = format == ActivationFormat::q8_K;
        for (int64_t n : {256, 4096, 32, 224, 4096 + 96}) {
            if (n % activation_block_size(format) != 0) continue;
            const std::vector<float> x = test_row(n, 9);
            std::vector<uint8_t> act(activation_row_bytes(format, n));
            activation_quantizer(format, Isa::scalar)(x.data(), act.data(), n);
            const size_t block_bytes = activation_block_bytes(format);
            const auto* k_blocks = reinterpret_cast<const ActBlockQ8_K*>(act.data());
            const std::string where = std::string(activation_format_name(format)) + " n " + std::to_string(n);
            std::vector<ActLaneGroup> want(size_t(act_lane_groups(n)));
            pack_act_lanes_scalar(format, act.data(), n, want.data());
            for (int64_t b = 0; b < act_lane_groups(n) * 8; ++b) {
                const ActLaneGroup& group = want[size_t(b / 8)];
                const int j = int(b % 8);
                const bool present = b < n / 32;
                const int8_t* qs = q8_K ? k_blocks[b / 8].qs + 32 * j : reinterpret_cast<const int8_t*>(&act[size_t(b) * block_bytes + block_bytes - 32]);
                int32_t sum = 0;
                for (int i = 0; i < 32; ++i) {
                    const int8_t level = present ? qs[i] : 0;
                    sum += level;
                    ASSERT_EQ(group.qs[32 * (i / 4) + 4 * j + i % 4], level) << where << " block " << b << " value " << i;
                }
                ASSERT_EQ(group.sums[j], q8_K ? 0 : sum) << where << " block " << b;
                float d = 0.0f;
                if (q8_K) d = k_blocks[b / 8].d;
                else if (present) d = tensor::f16_to_f32(uint16_t(act[size_t(b) * block_bytes] | act[size_t(b) * block_bytes + 1] << 8));
                ASSERT_EQ(bits_of(group.d[j]), bits_of(d)) << where << " block " << b;
                if (q8_K) {
                    ASSERT_EQ(group.bsums[2 * j] + group.bsums[2 * j + 1], sum) << where << " block " << b;
                }
                ASSERT_EQ(group.sub_sums[j], q8_K ? sum : 0) << where << " block " << b;
            }
            if (!isa_supported(Isa::avx2)) continue;
            std::vector<ActLaneGroup> got(want.size());
            std::memset(got.data(), 0xAB, got.size() * sizeof(ActLaneGroup));
            pack_act_lanes_avx2(format, act.data(), n, got.data());
            EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(ActLaneGroup)), 0) << where;
        }
    }
}

TEST(ActivationQuant, RowWidthNotAWholeBlockIsAnError) {
    const std::vector<float> x(300, 1.0f);
    std::vector<uint8_t> out(4096);
    EXPECT_THROW(activation_row_bytes(ActivationFormat::q8_0, 33), Error);
    try {
        quantize_activation_row(ActivationFormat::q8_K, x.data(), out.data(), 300, "blk.0.ffn_up");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
    }
}

TEST(ActivationQuant, FormatPerWeightTypeIsLlamaCpps) {
    using T = tensor::Type;
    EXPECT_EQ(activation_format(T::MXFP4), ActivationFormat::q8_0);
    EXPECT_EQ(activation_format(T::IQ4_NL), ActivationFormat::q8_0);
    EXPECT_EQ(activation_format(T::Q5_1), ActivationFormat::q8_1);
    EXPECT_EQ(activation_format(T::Q4_K), ActivationFormat::q8_K);
    EXPECT_EQ(activation_format(T::IQ4_XS), ActivationFormat::q8_K);
    EXPECT_EQ(activation_format(T::BF16), ActivationFormat::f32);
    EXPECT_EQ(activation_format(T::F32), ActivationFormat::f32);
}

class IntDot : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        traits_ = tensor::find_type(GetParam());
        ASSERT_NE(traits_, nullptr);
        format_ = activation_format(traits_->type);
        reference_ = int_dot_kernel(traits_->type, Isa::scalar);
        ASSERT_NE(reference_, nullptr);
    }
    // The scalar reference at one row, checked against every SIMD level bit for bit, and against
    // the dot (in double) of the decoded weights with the decoded activations: the f32 rounding
    // of the reference is at most a few ulps of Σ|terms| per block and accumulator step.
    // (`against_exact` only where every scale stays a normal f16: the extreme zoo rows underflow
    // or overflow them, and then the f16 roundings are the result, not a small error.)
    void check_row(const uint8_t* weights, const float* x, int64_t n, bool against_exact, const std::string& where) {
        std::vector<uint8_t> act(activation_row_bytes(format_, n));
        activation_quantizer(format_, Isa::scalar)(x, act.data(), n);
        const float want = reference_(weights, act.data(), n);
        for (Isa isa : simd_levels())
            ASSERT_EQ(bits_of(int_dot_kernel(traits_->type, isa)(weights, act.data(), n)), bits_of(want))
                << isa_name(isa) << " " << where;
        if (!against_exact) return;
        std::vector<float> w(static_cast<size_t>(n)), a(static_cast<size_t>(n));
        traits_->dequantize_row(weights, w.data(), n);
        dequantized_activations(act.data(), a.data(), n);
        double exact = 0, magnitude = 0;
        for (int64_t i = 0; i < n; ++i) {
            exact += double(w[size_t(i)]) * a[size_t(i)];
            magnitude += std::fabs(double(w[size_t(i)]) * a[size_t(i)]);
        }
        // Offset formats use m · s with s = f16(d·Σa) where the decoded product has m · f16(d) · Σa:
        // two f16 roundings (2^-11 each) of every block's |m · s|.
        double offset_slack = 0;
        if (format_ == ActivationFormat::q8_1) {
            const auto* blocks = reinterpret_cast<const ActBlockQ8_1*>(act.data());
            for (int64_t b = 0; b < n / 32; ++b) {
                uint16_t m_bits;
                std::memcpy(&m_bits, weights + b * traits_->block_bytes + 2, 2);
                offset_slack += std::ldexp(std::fabs(double(tensor::f16_to_f32(m_bits)) * tensor::f16_to_f32(blocks[b].s)), -10);
            }
        }
        EXPECT_NEAR(want, exact, 32 * FLT_EPSILON * magnitude + offset_slack) << where;
    }
    // matmul's native path (two threads) gives every (token, row) of `rows` weight rows times
    // each count of the tokens x (rounded: act) exactly the scalar reference's value.
    void expect_matmul_is_reference(const uint8_t* weights, size_t w_bytes, int64_t rows, const float* x, const uint8_t* act,
                                    int64_t n, std::initializer_list<int64_t> token_counts) const {
        const MatrixView w{traits_, weights, n, rows, w_bytes};
        const size_t act_bytes = activation_row_bytes(format_, n);
        ThreadPool pool(2);
        for (int64_t count : token_counts) {
            std::vector<float> y(size_t(count * rows));
            matmul(pool, w, x, n, count, y.data(), rows, Numerics::native);
            for (int64_t t = 0; t < count; ++t)
                for (int64_t r = 0; r < rows; ++r)
                    ASSERT_EQ(bits_of(y[size_t(t * rows + r)]), bits_of(reference_(weights + r * w_bytes, act + t * act_bytes, n)))
                        << "matmul, n " << n << ", " << count << " tokens, token " << t << " row " << r;
        }
    }
    void dequantized_activations(const uint8_t* act, float* a, int64_t n) const {
        for (int64_t b = 0; b < n / 32; ++b) {
            const size_t stride = activation_block_bytes(format_);
            uint16_t d_bits;
            std::memcpy(&d_bits, act + size_t(b) * stride, 2);
            const auto* qs = reinterpret_cast<const int8_t*>(act + size_t(b) * stride + stride - 32);
            for (int j = 0; j < 32; ++j) a[b * 32 + j] = tensor::f16_to_f32(d_bits) * float(qs[j]);
        }
    }
    const tensor::TypeTraits* traits_ = nullptr;
    ActivationFormat format_{};
    IntDotFn reference_ = nullptr;
};

// The zoo's rows (the quantiser reproduces its bytes, tensor tests) with activations from its
// source rows and from random rows; against the exact dot on the plain N(0,1) rows 0-31.
TEST_P(IntDot, EqualsScalarReferenceOnTheZoo) {
    const std::vector<float> source = read_f32(testing::fixture("quants/source.f32"));
    std::vector<uint8_t> row(tensor::row_bytes(*traits_, kZooCols));
    const std::vector<float> random = test_row(kZooCols, 11);
    for (int64_t r = 0; r < kZooRows; ++r) {
        traits_->quantize_row(source.data() + r * kZooCols, row.data(), kZooCols);
        const std::string where = "zoo row " + std::to_string(r);
        check_row(row.data(), source.data() + ((r + 1) % kZooRows) * kZooCols, kZooCols, r + 1 < 32, where);
        check_row(row.data(), random.data(), kZooCols, r < 32, where + ", random activations");
    }
}

// Random block bytes (finite f16 scales) reach every level and sign, including Q8_0's -128; row
// lengths that leave a partial group of eight blocks.
TEST_P(IntDot, EqualsScalarReferenceOnRandomBlocks) {
    std::mt19937 rng(77);
    std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
    for (int64_t n : {int64_t(32), int64_t(32 * 7), int64_t(32 * 13), int64_t(4096)}) {
        std::vector<uint8_t> bytes(tensor::row_bytes(*traits_, n));
        const std::vector<float> x = test_row(n, uint32_t(n));
        for (int trial = 0; trial < 20; ++trial) {
            for (uint8_t& b : bytes) b = uint8_t(rng());
            for (int64_t b = 0; b < n / 32; ++b) {
                uint8_t* block = bytes.data() + b * traits_->block_bytes;
                if (traits_->type == tensor::Type::MXFP4) {
                    block[0] = uint8_t(100 + rng() % 50);
                    continue;
                }
                const int fields = traits_->type == tensor::Type::Q4_1 || traits_->type == tensor::Type::Q5_1 ? 2 : 1;
                for (int f = 0; f < fields; ++f) {
                    const uint16_t h = tensor::f32_to_f16(scale(rng));
                    std::memcpy(block + 2 * f, &h, 2);
                }
            }
            check_row(bytes.data(), x.data(), n, true, "n " + std::to_string(n) + " trial " + std::to_string(trial));
        }
    }
}

// The tile and lane kernels give every (row, token) exactly the single-token kernel's value, for
// every count of rows and tokens around the tile sizes (up to four of each, around the lane
// kernels' panels of eight or sixteen rows, their runs of six tokens, and past their chunks of
// 32 or 64 tokens); matmul's native path gives every (token, row) exactly the scalar reference's
// value.
TEST_P(IntDot, TileKernelsAndMatmulEqualTheRowKernel) {
    const int64_t n = 32 * 20, rows = 24, tokens = 71;
    std::vector<int64_t> token_counts;
    for (int64_t count = 1; count <= 34; ++count) token_counts.push_back(count);
    for (int64_t count : {63, 64, 65, 71}) token_counts.push_back(count);
    std::mt19937 rng(5);
    std::vector<uint8_t> weights(tensor::row_bytes(*traits_, n) * rows);
    const std::vector<float> source = read_f32(testing::fixture("quants/source.f32"));
    std::vector<float> row(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < n; ++i) row[size_t(i)] = source[size_t((r * n + i) % (32 * kZooCols))];
        traits_->quantize_row(row.data(), weights.data() + r * tensor::row_bytes(*traits_, n), n);
    }
    std::vector<float> x;
    for (int64_t t = 0; t < tokens; ++t) {
        const std::vector<float> xt = test_row(n, uint32_t(100 + t));
        x.insert(x.end(), xt.begin(), xt.end());
    }
    const size_t act_bytes = activation_row_bytes(format_, n);
    std::vector<uint8_t> act(act_bytes * tokens);
    for (int64_t t = 0; t < tokens; ++t) activation_quantizer(format_, Isa::scalar)(x.data() + t * n, act.data() + t * act_bytes, n);
    const size_t w_bytes = tensor::row_bytes(*traits_, n);
    // The same rows lane-packed for the lane kernels.
    const int64_t groups = act_lane_groups(n);
    std::vector<ActLaneGroup> lanes(size_t(groups * tokens));
    for (int64_t t = 0; t < tokens; ++t) pack_act_lanes(format_, act.data() + t * act_bytes, n, lanes.data() + t * groups);
    const size_t lane_bytes = size_t(groups) * sizeof(ActLaneGroup);
    const int64_t y_stride = rows + 3;
    struct Kernel {
        std::string name;
        IntDotTileFn dot_tile;
        bool lane_kernel;
    };
    std::vector<Kernel> kernels;
    for (Isa isa : simd_levels()) {
        kernels.push_back({std::string(isa_name(isa)) + " tile", int_dot_tile_kernel(traits_->type, isa), false});
        kernels.push_back({std::string(isa_name(isa)) + " lanes", int_dot_lanes_kernel(traits_->type, isa), true});
    }
    if (vbmi_supported()) {  // both AVX-512 sets, whichever the selection takes
        kernels.push_back({"avx512 tile", int_dot_tile_kernel(traits_->type, avx512_int_dot_tile_kernels()), false});
        kernels.push_back({"avx512vbmi tile", int_dot_tile_kernel(traits_->type, avx512_vbmi_int_dot_tile_kernels()), false});
    }
    for (const auto& [name, dot_tile, lane_kernel] : kernels) {
        ASSERT_NE(dot_tile, nullptr) << name;
        const auto* rows_in = lane_kernel ? reinterpret_cast<const uint8_t*>(lanes.data()) : act.data();
        const size_t stride = lane_kernel ? lane_bytes : act_bytes;
        for (int64_t row_count : {int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(5), int64_t(7), int64_t(8), int64_t(15),
                                   int64_t(16), int64_t(17), rows})
            for (int64_t count : token_counts) {
                std::vector<float> y(size_t(count * y_stride), -1.0f);
                dot_tile(weights.data(), w_bytes, row_count, rows_in, stride, count, n, y.data(), y_stride);
                for (int64_t t = 0; t < count; ++t)
                    for (int64_t r = 0; r < y_stride; ++r) {
                        const float got = y[size_t(t * y_stride + r)];
                        if (r >= row_count) {
                            ASSERT_EQ(got, -1.0f) << name << " wrote past " << row_count << " rows";
                            continue;
                        }
                        ASSERT_EQ(bits_of(got),
                                  bits_of(reference_(weights.data() + r * w_bytes, act.data() + t * act_bytes, n)))
                            << name << ", " << row_count << " rows, "
                            << count << " tokens, row " << r << " token " << t;
                    }
            }
    }
    expect_matmul_is_reference(weights.data(), w_bytes, rows, x.data(), act.data(), n, {1, 2, tokens});
}

// The lane kernels at the largest products a row can hold: every block's levels at the type's
// smallest or largest level (bytes all 0x00, 0x77, 0x80 or 0xff: Q4_0's -8 and 7, Q5_0's -16 and
// 15, IQ4_NL's -127 and 113, MXFP4's ±12, Q4_1's 15, Q5_1's 31, Q8_0's -128) times activations
// all at +127 or all at -127: where a kernel adds int16 pair sums of the levels (plus a bias)
// before widening them (int_dot_simd.h), the sums must not wrap.
TEST_P(IntDot, LaneKernelsEqualTheReferenceAtTheLargestLevels) {
    const int64_t n = 32 * 16;
    const size_t w_bytes = tensor::row_bytes(*traits_, n), act_bytes = activation_row_bytes(format_, n);
    const int64_t groups = act_lane_groups(n);
    std::vector<uint8_t> act(act_bytes * 2);
    std::vector<ActLaneGroup> lanes(size_t(groups * 2));
    for (int t = 0; t < 2; ++t) {
        const std::vector<float> x(size_t(n), t == 0 ? 1.0f : -1.0f);
        activation_quantizer(format_, Isa::scalar)(x.data(), act.data() + t * act_bytes, n);
        pack_act_lanes(format_, act.data() + t * act_bytes, n, lanes.data() + t * groups);
    }
    for (const uint8_t fill : {uint8_t(0x00), uint8_t(0x77), uint8_t(0x80), uint8_t(0xff)}) {
        std::vector<uint8_t> weights(w_bytes, fill);
        for (int64_t b = 0; b < n / 32; ++b) {
            uint8_t* block = weights.data() + b * traits_->block_bytes;
            if (traits_->type == tensor::Type::MXFP4) {
                block[0] = 127;  // 2^0
                continue;
            }
            const int fields = traits_->type == tensor::Type::Q4_1 || traits_->type == tensor::Type::Q5_1 ? 2 : 1;
            const uint16_t h = tensor::f32_to_f16(0.01f);
            for (int f = 0; f < fields; ++f) std::memcpy(block + 2 * f, &h, 2);
        }
        for (Isa isa : simd_levels()) {
            std::vector<float> y(2);
            int_dot_lanes_kernel(traits_->type, isa)(weights.data(), w_bytes, 1, lanes.data(), size_t(groups) * sizeof(ActLaneGroup), 2,
                                                     n, y.data(), 1);
            for (int t = 0; t < 2; ++t)
                ASSERT_EQ(bits_of(y[size_t(t)]), bits_of(reference_(weights.data(), act.data() + t * act_bytes, n)))
                    << isa_name(isa) << " bytes 0x" << std::hex << int(fill) << std::dec << ", token " << t;
        }
    }
}

// The AMX tile kernel gives every (row, token) exactly the scalar reference's value for row
// counts around its 16-row tiles and token counts around its 16-token groups, on random block
// bytes (every level and sign, Q8_0's -128) and row widths that leave each of the eight slots
// one to five blocks; matmul's AMX path (four tokens and more) the same.
TEST_P(IntDot, AmxTilesEqualTheScalarReference) {
    const IntDotAmxFn dot_amx = int_dot_amx_kernel(traits_->type);
    if (format_ != ActivationFormat::q8_0) {
        EXPECT_EQ(dot_amx, nullptr) << "the offset formats have no AMX kernel";
        return;
    }
    if (!amx_supported()) GTEST_SKIP() << "this CPU (or its OS) has no AMX-INT8 tiles";
    ASSERT_NE(dot_amx, nullptr);
    std::mt19937 rng(91);
    const int64_t max_rows = 37, max_tokens = 40;
    for (int64_t n : {int64_t(32 * 5), int64_t(32 * 37)}) {
        const size_t w_bytes = tensor::row_bytes(*traits_, n);
        std::vector<uint8_t> weights(w_bytes * max_rows);
        for (uint8_t& b : weights) b = uint8_t(rng());
        for (int64_t r = 0; r < max_rows; ++r)
            for (int64_t b = 0; b < n / 32; ++b) {
                uint8_t* block = weights.data() + r * w_bytes + b * traits_->block_bytes;
                if (traits_->type == tensor::Type::MXFP4) {
                    block[0] = uint8_t(100 + rng() % 50);
                } else {
                    const uint16_t h = tensor::f32_to_f16(std::ldexp(float(int(rng() % 2001) - 1000), -10));
                    std::memcpy(block, &h, 2);
                }
            }
        const size_t act_bytes = activation_row_bytes(format_, n);
        std::vector<float> x;
        std::vector<uint8_t> act(act_bytes * max_tokens);
        for (int64_t t = 0; t < max_tokens; ++t) {
            const std::vector<float> xt = test_row(n, uint32_t(500 + t));
            activation_quantizer(format_, Isa::scalar)(xt.data(), act.data() + t * act_bytes, n);
            x.insert(x.end(), xt.begin(), xt.end());
        }
        const size_t group_bytes = amx_group_bytes(format_, n);
        std::vector<uint8_t> groups(group_bytes * size_t((max_tokens + kAmxTokens - 1) / kAmxTokens));
        for (int64_t t0 = 0; t0 < max_tokens; t0 += kAmxTokens)
            pack_act_amx(format_, act.data() + t0 * act_bytes, act_bytes, std::min<int64_t>(kAmxTokens, max_tokens - t0), n,
                         groups.data() + t0 / kAmxTokens * group_bytes);
        std::vector<std::byte> scratch(amx_scratch_bytes(format_, n) + 64);
        void* const aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
        const int64_t y_stride = max_rows + 3;
        for (int64_t rows : {int64_t(1), int64_t(5), int64_t(16), int64_t(17), max_rows})
            for (int64_t tokens : {int64_t(1), int64_t(4), int64_t(15), int64_t(16), int64_t(17), max_tokens}) {
                std::vector<float> y(size_t(tokens * y_stride), -1.0f);
                dot_amx(weights.data(), w_bytes, rows, groups.data(), group_bytes, tokens, n, y.data(), y_stride, aligned);
                for (int64_t t = 0; t < tokens; ++t)
                    for (int64_t r = 0; r < y_stride; ++r) {
                        const float got = y[size_t(t * y_stride + r)];
                        if (r >= rows) {
                            ASSERT_EQ(got, -1.0f) << "wrote past " << rows << " rows";
                            continue;
                        }
                        ASSERT_EQ(bits_of(got), bits_of(reference_(weights.data() + r * w_bytes, act.data() + t * act_bytes, n)))
                            << "n " << n << ", " << rows << " rows, " << tokens << " tokens, row " << r << " token " << t;
                    }
            }
        if (amx_enabled()) expect_matmul_is_reference(weights.data(), w_bytes, max_rows, x.data(), act.data(), n, {4, 17, max_tokens});
    }
}

// MXFP4's decode tiles take a full group's E8M0 scales through a fast path where every exponent
// is at least 2 (normal scales) and another where one is 0 or 1 (subnormal): whole groups of each,
// and 255 (2^127), equal the scalar reference at every level.
TEST(IntDotMxfp4, DecodeTilesTakeEveryScaleExponent) {
    const tensor::TypeTraits* traits = tensor::find_type("MXFP4");
    ASSERT_NE(traits, nullptr);
    const int64_t n = 32 * 24, rows = 9;
    const size_t w_bytes = tensor::row_bytes(*traits, n);
    std::mt19937 rng(9);
    std::vector<uint8_t> weights(w_bytes * rows);
    for (uint8_t& b : weights) b = uint8_t(rng());
    // Group 0 of every row all normal, group 1 with one subnormal exponent, group 2 with 255.
    const uint8_t normal[] = {2, 3, 100, 127, 130, 200, 253, 254}, subnormal[] = {0, 1};
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < n / 32; ++b) {
            uint8_t& e = weights[size_t(r) * w_bytes + size_t(b) * traits->block_bytes];
            e = normal[size_t(r + b) % 8];
            if (b == 8 + r % 8) e = subnormal[size_t(r) % 2];
            if (b == 16 + r % 8) e = 255;
        }
    const std::vector<float> x = test_row(n, 21);
    std::vector<uint8_t> act(activation_row_bytes(ActivationFormat::q8_0, n));
    activation_quantizer(ActivationFormat::q8_0, Isa::scalar)(x.data(), act.data(), n);
    const IntDotFn reference = int_dot_kernel(tensor::Type::MXFP4, Isa::scalar);
    for (Isa isa : simd_levels()) {
        std::vector<float> y(rows);
        int_dot_tile_kernel(tensor::Type::MXFP4, isa)(weights.data(), w_bytes, rows, act.data(), 0, 1, n, y.data(), rows);
        for (int64_t r = 0; r < rows; ++r)
            EXPECT_EQ(bits_of(y[size_t(r)]), bits_of(reference(weights.data() + r * w_bytes, act.data(), n))) << isa_name(isa) << " row " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, IntDot, ::testing::ValuesIn(kIntTypes),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// Gate and up in one pass: each output exactly matmul's own, whether the two share one rounding
// of the activations (Q8_0 and MXFP4: both Q8_0) or not (Q4_1 takes Q8_1), in both numerics.
TEST(MatmulSameInput, EachOutputIsItsOwnMatmul) {
    const std::vector<float> source = read_f32(testing::fixture("quants/source.f32"));
    const int64_t cols = kZooCols, rows = 40, tokens = 5;
    const auto encode = [&](const char* name, std::vector<uint8_t>& bytes) {
        const tensor::TypeTraits* t = tensor::find_type(name);
        const size_t row_size = tensor::row_bytes(*t, cols);
        bytes.resize(row_size * rows);
        for (int64_t r = 0; r < rows; ++r) t->quantize_row(source.data() + r * cols, bytes.data() + r * row_size, cols);
        return MatrixView{t, bytes.data(), cols, rows, row_size};
    };
    std::vector<float> x;
    for (int64_t t = 0; t < tokens; ++t) {
        const std::vector<float> xt = test_row(cols, uint32_t(300 + t));
        x.insert(x.end(), xt.begin(), xt.end());
    }
    ThreadPool pool(2);
    std::vector<uint8_t> a_bytes, b_bytes;
    for (const char* second : {"MXFP4", "Q4_1"}) {
        const MatrixView a = encode("Q8_0", a_bytes), b = encode(second, b_bytes);
        for (Numerics numerics : {Numerics::native, Numerics::exact})
            for (int64_t n : {int64_t(1), tokens}) {
                std::vector<float> ya(size_t(n * rows)), yb(size_t(n * rows)), want_a(ya.size()), want_b(yb.size());
                const MatmulOutput outputs[] = {{&a, ya.data(), rows}, {&b, yb.data(), rows}};
                matmul_same_input(pool, outputs, x.data(), cols, n, numerics);
                matmul(pool, a, x.data(), cols, n, want_a.data(), rows, numerics);
                matmul(pool, b, x.data(), cols, n, want_b.data(), rows, numerics);
                for (size_t i = 0; i < ya.size(); ++i) {
                    ASSERT_EQ(bits_of(ya[i]), bits_of(want_a[i])) << second << " " << numerics_name(numerics) << " " << i;
                    ASSERT_EQ(bits_of(yb[i]), bits_of(want_b[i])) << second << " " << numerics_name(numerics) << " " << i;
                }
            }
    }
}

// A MoE layer's experts in one pass: groups of outputs, each group with its own input (one token
// read in place by two groups, as decode's experts read it; several tokens, as prefill's, through
// the lane and AMX packings; rows picked from one input by several groups, some rows by more
// than one, as prefill's experts pick their tokens), every output the scalar reference's integer
// dot of its rows with its group's rounded tokens, bit for bit; under exact numerics each output
// is matmul's own of the rows the group reads.
TEST(MatmulGroups, EachGroupIsTheScalarReferenceOfItsOwnInput) {
    const std::vector<float> source = read_f32(testing::fixture("quants/source.f32"));
    const int64_t cols = kZooCols, rows = 40;
    struct Weights {
        const tensor::TypeTraits* type;
        std::vector<uint8_t> bytes;
        MatrixView view;
    };
    std::vector<Weights> weights;
    for (const char* name : {"Q8_0", "MXFP4", "Q4_1", "Q4_K"}) {
        Weights& w = weights.emplace_back();
        w.type = tensor::find_type(name);
        const size_t row_size = tensor::row_bytes(*w.type, cols);
        w.bytes.resize(row_size * rows);
        for (int64_t r = 0; r < rows; ++r) w.type->quantize_row(source.data() + r * cols, w.bytes.data() + r * row_size, cols);
        w.view = MatrixView{w.type, w.bytes.data(), cols, rows, row_size};
    }
    const auto tokens_of = [&](int64_t n, uint32_t seed) {
        std::vector<float> x;
        for (int64_t t = 0; t < n; ++t) {
            const std::vector<float> xt = test_row(cols, seed + uint32_t(t));
            x.insert(x.end(), xt.begin(), xt.end());
        }
        return x;
    };
    const std::vector<float> one = tokens_of(1, 700), five = tokens_of(5, 710), many = tokens_of(17, 720);
    struct Case {
        std::vector<size_t> outputs;  // indices into weights
        const std::vector<float>* x;
        int64_t n;
        std::vector<int64_t> picks = {};  // the rows of x it reads (empty: the first n)
    };
    const Case cases[] = {{{0, 1}, &one, 1},
                          {{0, 1}, &one, 1},
                          {{2}, &five, 5},
                          {{0, 1}, &many, 17},
                          {{2}, &many, 17},
                          {{0, 1}, &many, 4, {3, 0, 16, 5}},
                          {{0}, &many, 2, {16, 2}},
                          {{1, 2}, &many, 9, {1, 3, 5, 7, 9, 11, 13, 15, 3}},
                          {{2}, &five, 6, {4, 0, 4, 1, 2, 3}},
                          {{3}, &many, 17},
                          {{3}, &many, 5, {2, 2, 7, 0, 9}}};
    ThreadPool pool(2);
    for (Numerics numerics : {Numerics::native, Numerics::exact}) {
        std::vector<std::vector<float>> ys;
        std::vector<MatmulOutput> outputs;
        outputs.reserve(32);  // the groups' spans stay valid
        std::vector<MatmulGroup> groups;
        for (const Case& c : cases) {
            const size_t first = outputs.size();
            for (size_t k : c.outputs) {
                ys.emplace_back(size_t(c.n * rows), -1.0f);
                outputs.push_back({&weights[k].view, nullptr, rows});
            }
            groups.push_back(
                {std::span(outputs).subspan(first, c.outputs.size()), c.x->data(), cols, c.n, c.picks.empty() ? nullptr : c.picks.data()});
        }
        for (size_t i = 0; i < outputs.size(); ++i) outputs[i].y = ys[i].data();
        matmul_groups(pool, groups, numerics);
        size_t output = 0;
        for (const Case& c : cases)
            for (size_t k : c.outputs) {
                const Weights& w = weights[k];
                const std::vector<float>& y = ys[output++];
                std::vector<float> read;  // the rows the group reads
                for (int64_t t = 0; t < c.n; ++t) {
                    const float* row = c.x->data() + (c.picks.empty() ? t : c.picks[size_t(t)]) * cols;
                    read.insert(read.end(), row, row + cols);
                }
                std::vector<float> want(y.size());
                if (numerics == Numerics::exact) matmul(pool, w.view, read.data(), cols, c.n, want.data(), rows, numerics);
                for (int64_t t = 0; t < c.n && numerics == Numerics::native; ++t) {
                    const ActivationFormat format = activation_format(w.type->type);
                    std::vector<uint8_t> act(activation_row_bytes(format, cols));
                    activation_quantizer(format, Isa::scalar)(read.data() + t * cols, act.data(), cols);
                    for (int64_t r = 0; r < rows; ++r)
                        want[size_t(t * rows + r)] = int_dot_kernel(w.type->type, Isa::scalar)(w.view.row(r), act.data(), cols);
                }
                for (size_t i = 0; i < y.size(); ++i)
                    ASSERT_EQ(bits_of(y[i]), bits_of(want[i])) << w.type->name << " " << c.n << " tokens " << numerics_name(numerics) << " " << i;
            }
    }
}

TEST(IntDotKernel, TypesWithoutIntegerKernelKeepF32Activations) {
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        EXPECT_EQ(int_dot_kernel(tensor::Type::F32, isa), nullptr);
        EXPECT_EQ(int_dot_kernel(tensor::Type::BF16, isa), nullptr);
        EXPECT_EQ(int_dot_kernel(tensor::Type::F16, isa), nullptr);
    }
}

}  // namespace
}  // namespace k3::kernels
