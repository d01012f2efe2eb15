// compressed-tensors MXFP4 -> ggml block_mxfp4: a byte-exact permutation of nibbles that decodes
// to exactly the values the OCP MX definition gives, for every E8M0 exponent a block can carry.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "convert/mxfp4_repack.h"
#include "tensor/block_mxfp4.h"
#include "util/error.h"

namespace k3::convert {
namespace {

// E2M1 (sign bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) scaled by 2^(e-127), evaluated in
// double and rounded once to f32: the OCP MX value, independent of ggml's doubled table. The one
// exception is spec §9's: code 8 (-0) decodes to +0, since ggml's int8 table holds 0 there.
float ocp_mx_value(uint8_t code, uint8_t e) {
    static const double magnitude[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    const double v = std::ldexp(magnitude[code & 7], int(e) - 127);
    return float(code & 8 && v != 0 ? -v : v);
}

// Element k of a compressed-tensors row: nibble k&1 of byte k/2.
uint8_t packed_code(const std::vector<uint8_t>& packed, int64_t k) { return (packed[size_t(k / 2)] >> (4 * (k & 1))) & 15; }

TEST(Mxfp4Repack, DecodesToTheOcpValuesForEveryExponent) {
    // One row per exponent 0..254, 64 columns (two blocks); codes sweep all 16 values, both orders.
    const int64_t rows = 255, cols = 64;
    std::vector<uint8_t> packed(size_t(rows * cols / 2)), scales(size_t(rows * cols / 32));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t b = 0; b < cols / 32; ++b) scales[size_t(r * 2 + b)] = uint8_t(r);
        for (int64_t i = 0; i < cols / 2; ++i) packed[size_t(r * cols / 2 + i)] = uint8_t((i * 7 + r * 3) ^ (i << 4));
    }
    std::vector<uint8_t> blocks(size_t(rows * cols / 32 * 17));
    repack_mxfp4(packed.data(), scales.data(), rows, cols, blocks.data(), "test");

    std::vector<float> decoded(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        tensor::dequantize_row_mxfp4(blocks.data() + r * (cols / 32) * 17, decoded.data(), cols);
        const std::vector<uint8_t> row(packed.begin() + r * cols / 2, packed.begin() + (r + 1) * cols / 2);
        for (int64_t k = 0; k < cols; ++k) {
            const float want = ocp_mx_value(packed_code(row, k), uint8_t(r));
            EXPECT_EQ(std::bit_cast<uint32_t>(decoded[size_t(k)]), std::bit_cast<uint32_t>(want))
                << "e=" << r << " element " << k << ": " << decoded[size_t(k)] << " vs " << want;
        }
    }
}

TEST(Mxfp4Repack, IsAByteExactPermutation) {
    // Every byte value in every packed position, random-looking scales: repack, then undo the
    // nibble move by hand and get the checkpoint's bytes back.
    const int64_t rows = 16, cols = 512;
    std::vector<uint8_t> packed(size_t(rows * cols / 2)), scales(size_t(rows * cols / 32));
    for (size_t i = 0; i < packed.size(); ++i) packed[i] = uint8_t(i * 131 + 7);
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = uint8_t((i * 37) % 255);
    std::vector<uint8_t> blocks(size_t(rows * cols / 32 * 17));
    repack_mxfp4(packed.data(), scales.data(), rows, cols, blocks.data(), "test");

    std::vector<uint8_t> packed_back(packed.size()), scales_back(scales.size());
    for (size_t b = 0; b < scales.size(); ++b) {
        const uint8_t* block = blocks.data() + b * 17;
        scales_back[b] = block[0];
        for (int k = 0; k < 32; ++k) {
            const uint8_t code = k < 16 ? block[1 + k] & 15 : block[1 + k - 16] >> 4;  // ggml: j low, j+16 high
            packed_back[b * 16 + size_t(k / 2)] |= uint8_t(code << (4 * (k & 1)));
        }
    }
    EXPECT_EQ(packed_back, packed);
    EXPECT_EQ(scales_back, scales);
}

TEST(Mxfp4Repack, RejectsANaNScaleNamingTheTensor) {
    std::vector<uint8_t> packed(32), scales = {7, 0xFF}, blocks(34);
    try {
        repack_mxfp4(packed.data(), scales.data(), 1, 64, blocks.data(), "layers.1.experts.5.w2.weight_scale");
        FAIL() << "a 0xFF scale was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("layers.1.experts.5.w2.weight_scale"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("0xFF"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace k3::convert
