// The formats k3 owns from the start (F16, BF16, Q8_0, MXFP4, plain scalars) against
// independent math: the compiler's IEEE half conversions, the spec's decoding formulas (§9)
// written out plainly here, and llama.cpp's bytes in fixtures/quants.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "tensor/block_mxfp4.h"
#include "tensor/block_q8_0.h"
#include "tensor/float_formats.h"
#include "tensor/tensor_type.h"
#include "util/error.h"

namespace k3::tensor {
namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

// --- scalar conversions --------------------------------------------------------------------

TEST(HalfFloat, DecodesEveryBitPatternLikeTheCompiler) {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float expected = float(std::bit_cast<_Float16>(uint16_t(h)));
        const float got = f16_to_f32(uint16_t(h));
        if (std::isnan(expected)) ASSERT_TRUE(std::isnan(got)) << h;
        else ASSERT_EQ(bits_of(got), bits_of(expected)) << "half bits " << h;
    }
}

TEST(HalfFloat, EncodesWithRoundToNearestEvenLikeTheCompiler) {
    std::mt19937 rng(1);
    std::vector<float> values = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f, 0x1p-24f, 0x1p-25f,
                                 0x1.8p-25f, 0x1p-26f, 0x1.ffcp-15f, 0x1.ffep-15f, 6.1e-5f, INFINITY, -INFINITY, 1e-45f};
    for (int i = 0; i < 200000; ++i) values.push_back(std::bit_cast<float>(uint32_t(rng())));
    // Every f32 exactly halfway between two halves (ties), around the normal/subnormal edge too.
    for (uint32_t h = 0; h < 0x7c00; h += 7) {
        const float a = float(std::bit_cast<_Float16>(uint16_t(h)));
        const float b = float(std::bit_cast<_Float16>(uint16_t(h + 1)));
        values.push_back((a + b) / 2);
    }
    for (float x : values) {
        if (std::isnan(x)) {
            ASSERT_TRUE(std::isnan(f16_to_f32(f32_to_f16(x))));
            continue;
        }
        const uint16_t expected = std::bit_cast<uint16_t>(_Float16(x));
        ASSERT_EQ(f32_to_f16(x), expected) << "f32 bits " << bits_of(x);
    }
}

// Independent bf16 rounding: pick the nearer of the two neighbouring bf16 values (exact in
// double), the even one on a tie.
uint16_t reference_bf16(float x) {
    const uint32_t b = bits_of(x);
    const uint16_t down = uint16_t(b >> 16);
    const uint16_t up = uint16_t(down + 1);
    const double dx = double(x), d_down = double(bf16_to_f32(down));
    if ((b & 0xffff) == 0) return down;
    const double d_up = double(std::bit_cast<float>(uint32_t(up) << 16));
    const double e_down = std::fabs(dx - d_down), e_up = std::isinf(d_up) ? INFINITY : std::fabs(d_up - dx);
    if (std::isinf(d_up)) return (b & 0xffff) >= 0x8000 && ((b & 0xffff) > 0x8000 || (down & 1)) ? up : down;
    if (e_down < e_up) return down;
    if (e_up < e_down) return up;
    return (down & 1) ? up : down;
}

TEST(BFloat16, EncodesWithRoundToNearestEven) {
    std::mt19937 rng(2);
    for (int i = 0; i < 300000; ++i) {
        const float x = std::bit_cast<float>(uint32_t(rng()));
        if (std::isnan(x)) {
            EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(x))));
            continue;
        }
        ASSERT_EQ(f32_to_bf16(x), reference_bf16(x)) << "f32 bits " << bits_of(x);
    }
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(bits_of(bf16_to_f32(0xc040)), bits_of(-3.0f));
}

TEST(IntegerTypes, WidenToF32) {
    const int8_t i8[] = {-128, 0, 127};
    const int16_t i16[] = {-32768, 5, 32767};
    const int32_t i32[] = {-7, 1 << 20, 3};
    const int64_t i64[] = {-9, 1LL << 40, 11};
    const double f64[] = {0.5, -1e30, 3.25};
    float out[3];
    traits(Type::I8).dequantize_row(i8, out, 3);
    EXPECT_EQ(out[0], -128.0f);
    traits(Type::I16).dequantize_row(i16, out, 3);
    EXPECT_EQ(out[2], 32767.0f);
    traits(Type::I32).dequantize_row(i32, out, 3);
    EXPECT_EQ(out[1], 1048576.0f);
    traits(Type::I64).dequantize_row(i64, out, 3);
    EXPECT_EQ(out[1], 1099511627776.0f);
    traits(Type::F64).dequantize_row(f64, out, 3);
    EXPECT_EQ(out[1], -1e30f);
}

// --- the traits table ----------------------------------------------------------------------

TEST(TypeTraitsTable, CoversEveryEnumIdWithGgmlNamesAndGeometry) {
    struct Expected { Type type; const char* name; uint32_t block_size, block_bytes; };
    // ggml-common.h block sizes (k3-architecture.md §9).
    const Expected expected[] = {
        {Type::F32, "f32", 1, 4}, {Type::F16, "f16", 1, 2}, {Type::Q4_0, "q4_0", 32, 18}, {Type::Q4_1, "q4_1", 32, 20},
        {Type::Q5_0, "q5_0", 32, 22}, {Type::Q5_1, "q5_1", 32, 24}, {Type::Q8_0, "q8_0", 32, 34}, {Type::Q8_1, "q8_1", 32, 36},
        {Type::Q2_K, "q2_K", 256, 84}, {Type::Q3_K, "q3_K", 256, 110}, {Type::Q4_K, "q4_K", 256, 144},
        {Type::Q5_K, "q5_K", 256, 176}, {Type::Q6_K, "q6_K", 256, 210}, {Type::Q8_K, "q8_K", 256, 292},
        {Type::IQ2_XXS, "iq2_xxs", 256, 66}, {Type::IQ2_XS, "iq2_xs", 256, 74}, {Type::IQ3_XXS, "iq3_xxs", 256, 98},
        {Type::IQ1_S, "iq1_s", 256, 50}, {Type::IQ4_NL, "iq4_nl", 32, 18}, {Type::IQ3_S, "iq3_s", 256, 110},
        {Type::IQ2_S, "iq2_s", 256, 82}, {Type::IQ4_XS, "iq4_xs", 256, 136}, {Type::I8, "i8", 1, 1},
        {Type::I16, "i16", 1, 2}, {Type::I32, "i32", 1, 4}, {Type::I64, "i64", 1, 8}, {Type::F64, "f64", 1, 8},
        {Type::IQ1_M, "iq1_m", 256, 56}, {Type::BF16, "bf16", 1, 2}, {Type::TQ1_0, "tq1_0", 256, 54},
        {Type::TQ2_0, "tq2_0", 256, 66}, {Type::MXFP4, "mxfp4", 32, 17},
    };
    for (const Expected& e : expected) {
        const TypeTraits* t = find_type(uint32_t(e.type));
        ASSERT_NE(t, nullptr) << e.name;
        EXPECT_EQ(t->name, e.name);
        EXPECT_EQ(t->block_size, e.block_size) << e.name;
        EXPECT_EQ(t->block_bytes, e.block_bytes) << e.name;
        std::string upper = e.name;
        for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
        EXPECT_EQ(find_type(upper), t) << upper;
    }
    EXPECT_EQ(find_type(uint32_t(4)), nullptr);  // removed Q4_2
    EXPECT_EQ(find_type(uint32_t(999)), nullptr);
    EXPECT_EQ(find_type("q9_9"), nullptr);
    EXPECT_EQ(row_bytes(traits(Type::MXFP4), 3584), 1904u);  // §9: a K3 gate/up row
}

// --- Q8_0 and MXFP4 against the spec's formulas -------------------------------------------

// value[i] = d * q[i], d an IEEE half (decoded here by the compiler).
std::vector<float> reference_q8_0(const std::vector<uint8_t>& blocks) {
    std::vector<float> out;
    for (size_t b = 0; b < blocks.size(); b += 34) {
        uint16_t d_bits;
        std::memcpy(&d_bits, &blocks[b], 2);
        const float d = float(std::bit_cast<_Float16>(d_bits));
        for (int i = 0; i < 32; ++i) out.push_back(d * float(int8_t(blocks[b + 2 + i])));
    }
    return out;
}

// value = E2M1(code) * 2^(e - 127); E2M1 magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6, sign bit 3.
// Code 8 (E2M1 -0) decodes to +0: ggml's doubled table is int8 and holds a plain 0 there.
std::vector<float> reference_mxfp4(const std::vector<uint8_t>& blocks) {
    const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    auto value = [&](uint8_t code, int e) {
        const double magnitude = std::ldexp(e2m1[code & 7], e - 127);
        return float(code & 8 ? 0.0 - magnitude : magnitude);
    };
    std::vector<float> out;
    for (size_t b = 0; b < blocks.size(); b += 17) {
        std::vector<float> block(32);
        for (int j = 0; j < 16; ++j) {
            block[j] = value(blocks[b + 1 + j] & 15, blocks[b]);
            block[j + 16] = value(blocks[b + 1 + j] >> 4, blocks[b]);
        }
        out.insert(out.end(), block.begin(), block.end());
    }
    return out;
}

void expect_bitwise_equal(const std::vector<float>& got, const std::vector<float>& expected) {
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(bits_of(got[i]), bits_of(expected[i])) << "element " << i << ": got " << got[i] << " expected " << expected[i];
}

TEST(Q8_0, DequantizesRandomBlocksLikeTheSpecFormula) {
    std::mt19937 rng(3);
    std::vector<uint8_t> blocks(34 * 500);
    for (uint8_t& b : blocks) b = uint8_t(rng());
    for (size_t b = 0; b < blocks.size(); b += 34) {  // keep d finite: no inf/NaN exponent
        if ((blocks[b + 1] & 0x7c) == 0x7c) blocks[b + 1] &= 0xbf;
    }
    std::vector<float> got(500 * 32);
    dequantize_row_q8_0(blocks.data(), got.data(), int64_t(got.size()));
    expect_bitwise_equal(got, reference_q8_0(blocks));
}

TEST(Mxfp4, DequantizesRandomBlocksAndEveryScaleEdgeLikeTheSpecFormula) {
    std::mt19937 rng(4);
    std::vector<uint8_t> blocks;
    for (int e : {0, 1, 2, 127, 254})  // the E8M0 edge cases: subnormal halves, 1, largest
        for (int repeat = 0; repeat < 4; ++repeat) {
            blocks.push_back(uint8_t(e));
            for (int j = 0; j < 16; ++j) blocks.push_back(uint8_t(rng()));
        }
    for (int b = 0; b < 500; ++b) {
        blocks.push_back(uint8_t(rng() % 255));
        for (int j = 0; j < 16; ++j) blocks.push_back(uint8_t(rng()));
    }
    std::vector<float> got(blocks.size() / 17 * 32);
    dequantize_row_mxfp4(blocks.data(), got.data(), int64_t(got.size()));
    expect_bitwise_equal(got, reference_mxfp4(blocks));
    EXPECT_EQ(e8m0_to_f32_half(0), std::ldexp(1.0f, -128));
    EXPECT_EQ(e8m0_to_f32_half(1), std::ldexp(1.0f, -127));
    EXPECT_EQ(e8m0_to_f32_half(254), std::ldexp(1.0f, 126));
    EXPECT_NO_THROW(validate_mxfp4_blocks(blocks.data(), int64_t(blocks.size() / 17), "test"));
}

TEST(Mxfp4, ValidationRejectsTheNaNScaleByte) {
    std::vector<uint8_t> blocks(17 * 3, 0x11);
    blocks[17 * 2] = 0xFF;
    try {
        validate_mxfp4_blocks(blocks.data(), 3, "blk.1.ffn_up_exps.weight");
        FAIL() << "0xFF scale accepted";
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("blk.1.ffn_up_exps.weight"), std::string::npos) << message;
        EXPECT_NE(message.find("block 2"), std::string::npos) << message;
        EXPECT_NE(message.find("0xFF"), std::string::npos) << message;
    }
}

TEST(Mxfp4, QuantizationPicksTheLowestIndexOnTiesAndWrapsTinyExponents) {
    // amax = 6 -> e = floor(log2 6) - 2 + 127 = 127, d = 2^-1: codes are exact E2M1 values.
    std::vector<float> x(32, 0.0f);
    x[0] = 6.0f;
    x[1] = -0.0f;   // |0*d - (-0)| ties between code 0 and 8 (-0): code 0 wins
    x[2] = 0.25f;   // halfway between 0 (code 0) and 0.5 (code 1): code 0 wins
    x[3] = -1.25f;  // halfway between -1 (code 10) and -1.5 (code 11): code 10 wins
    x[16] = 5.0f;   // halfway between 4 and 6: code 6 (4) wins
    uint8_t block[17];
    quantize_row_mxfp4(x.data(), block, 32);
    EXPECT_EQ(block[0], 127);
    EXPECT_EQ(block[1], 7 | 6 << 4);
    EXPECT_EQ(block[2], 0);
    EXPECT_EQ(block[3], 0);
    EXPECT_EQ(block[4], 10);
}

// --- llama.cpp's bytes: fixtures/quants ----------------------------------------------------

class CoreFormatsZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(CoreFormatsZoo, QuantizeAndDequantizeMatchLlamaCpp) {
    const std::string type_name = GetParam();
    const TypeTraits* t = find_type(type_name);
    ASSERT_NE(t, nullptr);
    const auto zoo = gguf::GgufFile::open(testing::fixture("quants/zoo.gguf"));
    const gguf::TensorInfo* info = zoo->find_tensor(type_name);
    ASSERT_NE(info, nullptr);
    ASSERT_EQ(info->type, t->type);
    ASSERT_EQ(info->ne, (std::vector<int64_t>{512, 64}));

    const std::vector<uint8_t> source_bytes = testing::read_bytes(testing::fixture("quants/source.f32"));
    std::vector<float> source(source_bytes.size() / 4);
    std::memcpy(source.data(), source_bytes.data(), source_bytes.size());
    const std::vector<uint8_t> decoded_bytes = testing::read_bytes(testing::fixture("quants/" + type_name + ".dequant.f32"));
    ASSERT_EQ(source.size(), 512u * 64u);
    ASSERT_EQ(decoded_bytes.size(), source_bytes.size());

    const size_t row = row_bytes(*t, 512);
    std::vector<uint8_t> quantized(row);
    std::vector<float> decoded(512);
    for (int r = 0; r < 64; ++r) {
        t->quantize_row(source.data() + r * 512, quantized.data(), 512);
        ASSERT_EQ(std::memcmp(quantized.data(), info->data + r * row, row), 0) << type_name << " row " << r;
        t->dequantize_row(info->data + r * row, decoded.data(), 512);
        ASSERT_EQ(std::memcmp(decoded.data(), decoded_bytes.data() + r * 512 * 4, 512 * 4), 0) << type_name << " row " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, CoreFormatsZoo, ::testing::Values("F16", "BF16", "Q8_0", "MXFP4"));

}  // namespace
}  // namespace k3::tensor
