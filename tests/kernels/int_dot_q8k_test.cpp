// The × Q8_K integer kernels of the 256-value formats (int_dot.h): every SIMD level equals the
// scalar reference bit for bit, on the zoo's rows (fixtures/quants-imatrix holds every such type)
// and on random blocks, and the reference is the dot product of the decoded weights (the
// fixture-checked decoders) with the decoded activations; the multi-token kernels and matmul's
// native path give every token the reference's value.
#include <gtest/gtest.h>

#include <cfloat>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/activation_quant.h"
#include "kernels/int_dot.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "support/test_support.h"
#include "tensor/block_kquants.h"
#include "tensor/float_formats.h"
#include "tensor/quant_bytes.h"

namespace k3::kernels {
namespace {

constexpr int64_t kCols = 512, kRows = 64;
const char* const kQ8KTypes[] = {"Q2_K",   "Q3_K",    "Q4_K",   "Q5_K",    "Q6_K",  "IQ4_XS", "IQ1_S", "IQ1_M",
                                 "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "TQ1_0",  "TQ2_0"};

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// matmul (native numerics, 2 threads) of x's first `count` token rows, for each count, equals
// want(row, token) bit for bit.
template <typename Want>
void expect_matmul_bits(const MatrixView& w, const std::vector<float>& x, std::initializer_list<int64_t> counts, Want want) {
    ThreadPool pool(2);
    for (int64_t count : counts) {
        std::vector<float> y(size_t(count * w.rows));
        matmul(pool, w, x.data(), w.cols, count, y.data(), w.rows, Numerics::native);
        for (int64_t t = 0; t < count; ++t)
            for (int64_t r = 0; r < w.rows; ++r)
                ASSERT_EQ(bits_of(y[size_t(t * w.rows + r)]), bits_of(want(r, t)))
                    << "matmul, " << count << " tokens, token " << t << " row " << r;
    }
}

std::vector<float> random_row(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng) * std::ldexp(1.0f, int(rng() % 16) - 8);
    for (int64_t i = 0; i < 16; ++i) x[size_t(i)] = 0.0f;  // one all-zero slot
    return x;
}

// |offset| of each value for the formats x = d·sc·q − dmin·m (0 elsewhere), from the block bytes.
std::vector<double> offsets(tensor::Type type, const uint8_t* row, int64_t n) {
    std::vector<double> out(static_cast<size_t>(n), 0.0);
    for (int64_t b = 0; b < n / 256; ++b) {
        for (int i = 0; i < 256; ++i) {
            double m = 0;
            if (type == tensor::Type::Q2_K) {
                const auto& block = reinterpret_cast<const tensor::BlockQ2_K*>(row)[b];
                m = double(tensor::load_f16(block.dmin)) * (block.scales[i / 16] >> 4);
            } else if (type == tensor::Type::Q4_K || type == tensor::Type::Q5_K) {
                const uint8_t* block = row + b * (type == tensor::Type::Q4_K ? 144 : 176);
                m = double(tensor::load_f16(block + 2)) * tensor::unpack_scale_min_k4(block + 4, i / 32).min;
            }
            out[size_t(b * 256 + i)] = std::fabs(m);
        }
    }
    return out;
}

class IntDotQ8K : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        traits_ = tensor::find_type(GetParam());
        ASSERT_NE(traits_, nullptr);
        ASSERT_EQ(activation_format(traits_->type), ActivationFormat::q8_K);
        reference_ = int_dot_kernel(traits_->type, Isa::scalar);
        ASSERT_NE(reference_, nullptr);
        for (Isa isa : {Isa::avx2, Isa::avx512})
            if (isa_supported(isa)) levels_.push_back(isa);
    }

    // The reference at one row, against every SIMD level bit for bit (NaN against NaN), and where
    // `against_exact`, against the dot (in double) of the decoded weights with the decoded
    // activations: a few ulps of Σ|w·a| per step (the decoded w rounds scale·q + offset twice, so
    // the offset formats also get the ulps of Σ|offset·a|).
    void check_row(const uint8_t* weights, const float* x, int64_t n, bool against_exact, const std::string& where) {
        std::vector<ActBlockQ8_K> act(size_t(n / 256));
        activation_quantizer(ActivationFormat::q8_K, Isa::scalar)(x, act.data(), n);
        const float want = reference_(weights, act.data(), n);
        for (Isa isa : levels_) {
            const float got = int_dot_kernel(traits_->type, isa)(weights, act.data(), n);
            if (std::isnan(want) && std::isnan(got)) continue;
            ASSERT_EQ(bits_of(got), bits_of(want)) << isa_name(isa) << " " << where << ": " << got << " vs " << want;
        }
        if (!against_exact) return;
        std::vector<float> w(static_cast<size_t>(n));
        traits_->dequantize_row(weights, w.data(), n);
        const std::vector<double> m = offsets(traits_->type, weights, n);
        double exact = 0, magnitude = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double a = double(act[size_t(i / 256)].d) * act[size_t(i / 256)].qs[i % 256];
            exact += double(w[size_t(i)]) * a;
            magnitude += (std::fabs(double(w[size_t(i)])) + 2 * m[size_t(i)]) * std::fabs(a);
        }
        EXPECT_NEAR(want, exact, 32 * FLT_EPSILON * magnitude) << where;
    }

    const tensor::TypeTraits* traits_ = nullptr;
    IntDotFn reference_ = nullptr;
    std::vector<Isa> levels_;
};

// Against the exact dot on the plain N(0,1) rows 0-31 (the others push scales out of f16's
// normal range, where the f16 roundings are the result, not a small error).
TEST_P(IntDotQ8K, EqualsScalarReferenceOnTheZoo) {
    const auto zoo = gguf::GgufFile::open(testing::fixture("quants-imatrix/zoo.gguf"));
    const gguf::TensorInfo* info = zoo->find_tensor(GetParam());
    ASSERT_NE(info, nullptr);
    ASSERT_EQ(info->type, traits_->type);
    const size_t row_size = tensor::row_bytes(*traits_, kCols);
    ASSERT_EQ(info->n_bytes, row_size * kRows);
    const std::vector<uint8_t> bytes = testing::read_bytes(testing::fixture("quants-imatrix/source.f32"));
    std::vector<float> source(size_t(kCols * kRows));
    ASSERT_EQ(bytes.size(), source.size() * 4);
    std::memcpy(source.data(), bytes.data(), bytes.size());
    const std::vector<float> random = random_row(kCols, 11);
    for (int64_t r = 0; r < kRows; ++r) {
        const std::string where = "zoo row " + std::to_string(r);
        check_row(info->data + r * row_size, source.data() + ((r + 1) % kRows) * kCols, kCols, r + 1 < 32, where);
        check_row(info->data + r * row_size, random.data(), kCols, r < 32, where + ", random activations");
    }
}

// Random block bytes reach every level, sign, grid point and scale byte (infinite and NaN f16
// scales included).
TEST_P(IntDotQ8K, EqualsScalarReferenceOnRandomBlocks) {
    std::mt19937 rng(77);
    for (int64_t n : {int64_t(256), int64_t(256 * 7)}) {
        std::vector<uint8_t> weights(tensor::row_bytes(*traits_, n));
        const std::vector<float> x = random_row(n, uint32_t(n));
        for (int trial = 0; trial < 30; ++trial) {
            for (uint8_t& b : weights) b = uint8_t(rng());
            check_row(weights.data(), x.data(), n, false, "n " + std::to_string(n) + " trial " + std::to_string(trial));
        }
    }
}

// Rows of 2 zoo rows (1024 values), several tokens: each token gets exactly the reference's value.
TEST_P(IntDotQ8K, MultiTokenKernelsAndMatmulEqualTheReference) {
    const auto zoo = gguf::GgufFile::open(testing::fixture("quants-imatrix/zoo.gguf"));
    const gguf::TensorInfo* info = zoo->find_tensor(GetParam());
    ASSERT_NE(info, nullptr);
    const int64_t n = 2 * kCols, rows = kRows / 2, tokens = 9;
    const size_t w_bytes = tensor::row_bytes(*traits_, n);
    const size_t act_bytes = activation_row_bytes(ActivationFormat::q8_K, n);
    std::vector<float> x;
    for (int64_t t = 0; t < tokens; ++t) {
        const std::vector<float> xt = random_row(n, uint32_t(100 + t));
        x.insert(x.end(), xt.begin(), xt.end());
    }
    std::vector<uint8_t> act(act_bytes * tokens);
    for (int64_t t = 0; t < tokens; ++t)
        activation_quantizer(ActivationFormat::q8_K, Isa::scalar)(x.data() + t * n, act.data() + t * act_bytes, n);
    const auto want = [&](int64_t r, int64_t t) { return reference_(info->data + r * w_bytes, act.data() + t * act_bytes, n); };
    for (Isa isa : levels_) {
        const IntDotTileFn dot_tile = int_dot_tile_kernel(traits_->type, isa);
        ASSERT_NE(dot_tile, nullptr) << isa_name(isa);
        for (int64_t count = 1; count <= tokens; ++count) {
            std::vector<float> y(size_t(count) * 3, -1.0f);
            dot_tile(info->data, w_bytes, 1, act.data(), act_bytes, count, n, y.data(), 3);
            for (int64_t t = 0; t < count; ++t)
                ASSERT_EQ(bits_of(y[size_t(t) * 3]), bits_of(want(0, t))) << isa_name(isa) << " " << count << " tokens, token " << t;
        }
    }
    expect_matmul_bits({traits_, info->data, n, rows, w_bytes}, x, {1, 2, tokens}, want);
}

// The formats of unsigned levels have lane kernels at both SIMD levels; the others none.
TEST_P(IntDotQ8K, LaneKernelsExistForTheUnsignedLevelFormats) {
    const std::string name = GetParam();
    const bool unsigned_levels = name == "Q2_K" || name == "Q3_K" || name == "Q4_K" || name == "Q5_K" || name == "Q6_K";
    for (Isa isa : levels_) EXPECT_EQ(int_dot_lanes_kernel(traits_->type, isa) != nullptr, unsigned_levels) << isa_name(isa);
}

// Every row count 1-9 and 15-18 by every token count 1-19 and 63-66 of the tile kernels (decode's
// four-row tiles, prefill's eight-token groups in four-row chunks, and its four-token tiles, with
// each remainder) and of the lane kernels (panels of eight rows, sixteen at AVX-512, four-token
// groups, 64-token chunks), rows 1025 bytes apart (unaligned blocks): each (row, token) gets
// exactly the reference's value and nothing outside the tile is written.
TEST_P(IntDotQ8K, TileKernelsEqualTheReferenceAtEveryRowAndTokenCount) {
    const auto zoo = gguf::GgufFile::open(testing::fixture("quants-imatrix/zoo.gguf"));
    const gguf::TensorInfo* info = zoo->find_tensor(GetParam());
    ASSERT_NE(info, nullptr);
    const int64_t n = 2 * kCols, max_rows = 18, max_tokens = 66;
    std::vector<int64_t> token_counts;
    for (int64_t tokens = 1; tokens <= max_tokens; ++tokens)
        if (tokens <= 19 || tokens >= 63) token_counts.push_back(tokens);
    const size_t w_bytes = tensor::row_bytes(*traits_, n), w_stride = w_bytes + 1;
    std::vector<uint8_t> weights(w_stride * max_rows);
    for (int64_t r = 0; r < max_rows; ++r) std::memcpy(weights.data() + r * w_stride, info->data + r * w_bytes, w_bytes);
    const size_t act_bytes = activation_row_bytes(ActivationFormat::q8_K, n);
    std::vector<uint8_t> act(act_bytes * max_tokens);
    for (int64_t t = 0; t < max_tokens; ++t)
        activation_quantizer(ActivationFormat::q8_K, Isa::scalar)(random_row(n, uint32_t(200 + t)).data(), act.data() + t * act_bytes, n);
    const int64_t groups = act_lane_groups(n);
    std::vector<ActLaneGroup> lanes(size_t(groups * max_tokens));
    for (int64_t t = 0; t < max_tokens; ++t) pack_act_lanes(ActivationFormat::q8_K, act.data() + t * act_bytes, n, lanes.data() + t * groups);
    for (Isa isa : levels_)
        for (const bool lane_kernel : {false, true}) {
            const IntDotTileFn dot_tile = lane_kernel ? int_dot_lanes_kernel(traits_->type, isa) : int_dot_tile_kernel(traits_->type, isa);
            if (lane_kernel && !dot_tile) continue;  // LaneKernelsExistForTheUnsignedLevelFormats
            ASSERT_NE(dot_tile, nullptr) << isa_name(isa);
            const auto* rows_in = lane_kernel ? reinterpret_cast<const uint8_t*>(lanes.data()) : act.data();
            const size_t stride = lane_kernel ? size_t(groups) * sizeof(ActLaneGroup) : act_bytes;
            const char* kind = lane_kernel ? " lanes " : " tile ";
            for (int64_t rows = 1; rows <= max_rows; rows += rows == 9 ? 6 : 1) {
                for (const int64_t tokens : token_counts) {
                    const int64_t y_stride = rows + 1;
                    std::vector<float> y(size_t(tokens * y_stride), -1.0f);
                    dot_tile(weights.data(), w_stride, rows, rows_in, stride, tokens, n, y.data(), y_stride);
                    for (int64_t t = 0; t < tokens; ++t) {
                        for (int64_t r = 0; r < rows; ++r) {
                            const float want = reference_(weights.data() + r * w_stride, act.data() + t * act_bytes, n);
                            ASSERT_EQ(bits_of(y[size_t(t * y_stride + r)]), bits_of(want))
                                << isa_name(isa) << kind << rows << " rows, " << tokens << " tokens: row " << r << " token " << t;
                        }
                        ASSERT_EQ(y[size_t(t * y_stride + rows)], -1.0f) << isa_name(isa) << kind << "wrote past row " << rows;
                    }
                }
            }
        }
}

// The lane kernels and decode's tiles (four rows, one token) at the largest products a row can
// hold: every level byte at its largest
// (block bytes 0xff, the f16 factors set to 2^-10: Q2_K's 3, Q3_K's 7, Q4_K's 15, Q5_K's 31,
// Q6_K's 63 with the largest scale and min codes) times activations all +127 or all -127: where
// the AVX2 kernel adds maddubs' pair sums in int16 before applying the scales, and where the
// AVX-512 decode tiles pack byte-dot sums into int16, they must not wrap.
TEST_P(IntDotQ8K, LaneAndDecodeKernelsEqualTheReferenceAtTheLargestLevels) {
    const int64_t n = 256 * 2;
    const size_t w_bytes = tensor::row_bytes(*traits_, n), act_bytes = activation_row_bytes(ActivationFormat::q8_K, n);
    const int64_t groups = act_lane_groups(n);
    std::vector<uint8_t> act(act_bytes * 2);
    std::vector<ActLaneGroup> lanes(size_t(groups * 2));
    for (int t = 0; t < 2; ++t) {
        const std::vector<float> x(size_t(n), t == 0 ? 1.0f : -1.0f);
        activation_quantizer(ActivationFormat::q8_K, Isa::scalar)(x.data(), act.data() + t * act_bytes, n);
        pack_act_lanes(ActivationFormat::q8_K, act.data() + t * act_bytes, n, lanes.data() + t * groups);
    }
    // Each format's f16 fields (d, and dmin where it has one).
    std::vector<size_t> f16_fields;
    switch (traits_->type) {
        case tensor::Type::Q2_K: f16_fields = {offsetof(tensor::BlockQ2_K, d), offsetof(tensor::BlockQ2_K, dmin)}; break;
        case tensor::Type::Q3_K: f16_fields = {offsetof(tensor::BlockQ3_K, d)}; break;
        case tensor::Type::Q4_K: f16_fields = {offsetof(tensor::BlockQ4_K, d), offsetof(tensor::BlockQ4_K, dmin)}; break;
        case tensor::Type::Q5_K: f16_fields = {offsetof(tensor::BlockQ5_K, d), offsetof(tensor::BlockQ5_K, dmin)}; break;
        case tensor::Type::Q6_K: f16_fields = {offsetof(tensor::BlockQ6_K, d)}; break;
        default: GTEST_SKIP() << "no lane kernel (LaneKernelsExistForTheUnsignedLevelFormats)";
    }
    constexpr int64_t kTileRows = 4;
    std::vector<uint8_t> weights(w_bytes * kTileRows, 0xff);
    const uint16_t small = tensor::f32_to_f16(1.0f / 1024);
    for (int64_t b = 0; b < kTileRows * n / 256; ++b)
        for (size_t field : f16_fields) std::memcpy(weights.data() + size_t(b) * traits_->block_bytes + field, &small, 2);
    for (Isa isa : levels_) {
        std::vector<float> y(2);
        int_dot_lanes_kernel(traits_->type, isa)(weights.data(), w_bytes, 1, lanes.data(), size_t(groups) * sizeof(ActLaneGroup), 2, n,
                                                 y.data(), 1);
        for (int t = 0; t < 2; ++t) {
            const float want = reference_(weights.data(), act.data() + t * act_bytes, n);
            ASSERT_TRUE(std::isfinite(want));
            ASSERT_EQ(bits_of(y[size_t(t)]), bits_of(want)) << isa_name(isa) << " token " << t;
            std::vector<float> rows_y(kTileRows);
            int_dot_tile_kernel(traits_->type, isa)(weights.data(), w_bytes, kTileRows, act.data() + t * act_bytes, act_bytes, 1, n,
                                                    rows_y.data(), 1);
            for (int64_t r = 0; r < kTileRows; ++r)
                ASSERT_EQ(bits_of(rows_y[size_t(r)]), bits_of(want)) << isa_name(isa) << " decode tile, token " << t << " row " << r;
        }
    }
}

// The AMX tile kernel gives every (row, token) exactly the scalar reference's value for row
// counts around its 16-row panels and token counts around its 16-token groups and its runs of
// 8 groups, on the zoo's rows
// (two per row: 1024 values) and on random block bytes (every level, scale and min byte; NaN
// against NaN where an f16 factor is one); matmul's AMX path (four tokens and more) the same.
TEST_P(IntDotQ8K, AmxTilesEqualTheScalarReference) {
    const IntDotAmxFn dot_amx = int_dot_amx_kernel(traits_->type);
    if (!amx_supported()) GTEST_SKIP() << "this CPU (or its OS) has no AMX-INT8 tiles";
    ASSERT_NE(dot_amx, nullptr);
    const auto zoo = gguf::GgufFile::open(testing::fixture("quants-imatrix/zoo.gguf"));
    const gguf::TensorInfo* info = zoo->find_tensor(GetParam());
    ASSERT_NE(info, nullptr);
    const int64_t n = 2 * kCols, max_rows = kRows / 2, max_tokens = 8 * kAmxTokens + 9;  // past a run of 8 groups
    const size_t w_bytes = tensor::row_bytes(*traits_, n);
    std::vector<uint8_t> random_weights(w_bytes * max_rows);
    std::mt19937 rng(93);
    for (uint8_t& b : random_weights) b = uint8_t(rng());
    const size_t act_bytes = activation_row_bytes(ActivationFormat::q8_K, n);
    std::vector<float> x;
    std::vector<uint8_t> act(act_bytes * max_tokens);
    for (int64_t t = 0; t < max_tokens; ++t) {
        const std::vector<float> xt = random_row(n, uint32_t(400 + t));
        activation_quantizer(ActivationFormat::q8_K, Isa::scalar)(xt.data(), act.data() + t * act_bytes, n);
        x.insert(x.end(), xt.begin(), xt.end());
    }
    const size_t group_bytes = amx_group_bytes(ActivationFormat::q8_K, n);
    std::vector<uint8_t> groups(group_bytes * size_t((max_tokens + kAmxTokens - 1) / kAmxTokens));
    for (int64_t t0 = 0; t0 < max_tokens; t0 += kAmxTokens)
        pack_act_amx(ActivationFormat::q8_K, act.data() + t0 * act_bytes, act_bytes, std::min<int64_t>(kAmxTokens, max_tokens - t0),
                     n, groups.data() + t0 / kAmxTokens * group_bytes);
    std::vector<std::byte> scratch(amx_scratch_bytes(ActivationFormat::q8_K, n) + 64);
    void* const aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
    const int64_t y_stride = max_rows + 3;
    for (const uint8_t* weights : {info->data, static_cast<const uint8_t*>(random_weights.data())}) {
        const char* source = weights == info->data ? "zoo" : "random";
        for (int64_t rows : {int64_t(1), int64_t(5), int64_t(16), int64_t(17), max_rows})
            for (int64_t tokens : {int64_t(1), int64_t(4), int64_t(15), int64_t(16), int64_t(17), int64_t(128), max_tokens}) {
                std::vector<float> y(size_t(tokens * y_stride), -1.0f);
                dot_amx(weights, w_bytes, rows, groups.data(), group_bytes, tokens, n, y.data(), y_stride, aligned);
                for (int64_t t = 0; t < tokens; ++t)
                    for (int64_t r = 0; r < y_stride; ++r) {
                        const float got = y[size_t(t * y_stride + r)];
                        if (r >= rows) {
                            ASSERT_EQ(got, -1.0f) << source << ": wrote past " << rows << " rows";
                            continue;
                        }
                        const float want = reference_(weights + r * w_bytes, act.data() + t * act_bytes, n);
                        if (std::isnan(want) && std::isnan(got)) continue;
                        ASSERT_EQ(bits_of(got), bits_of(want))
                            << source << ": " << rows << " rows, " << tokens << " tokens, row " << r << " token " << t;
                    }
            }
    }
    if (!amx_enabled()) return;
    expect_matmul_bits({traits_, info->data, n, max_rows, w_bytes}, x, {4, 17, max_tokens}, [&](int64_t r, int64_t t) {
        return reference_(info->data + r * w_bytes, act.data() + t * act_bytes, n);
    });
}

INSTANTIATE_TEST_SUITE_P(Types, IntDotQ8K, ::testing::ValuesIn(kQ8KTypes),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace k3::kernels
