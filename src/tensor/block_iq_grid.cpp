#include "tensor/block_iq_grid.h"

#include "tensor/iq_grids.h"
#include "tensor/quant_bytes.h"

namespace k3::tensor {
namespace {

// The N values of one group: scale·magnitude, negated where bit j of signs is set.
template <int N, typename Entry>
void decode_signed_group(Entry magnitudes, unsigned signs, float scale, float* y) {
    for (int j = 0; j < N; ++j) {
        const float v = scale * float(uint8_t(magnitudes >> (8 * j)));
        y[j] = (signs >> j) & 1 ? -v : v;
    }
}

// The 8 values of one IQ1 group: scale·(g + delta), g the grid's int8 values.
void decode_iq1_group(uint64_t grid, float delta, float scale, float* y) {
    for (int j = 0; j < 8; ++j) y[j] = scale * (float(int8_t(grid >> (8 * j))) + delta);
}

template <typename Block, typename DecodeBlock>
void for_each_block(const void* blocks, float* out, int64_t n, DecodeBlock decode_block) {
    const auto* block = static_cast<const Block*>(blocks);
    for (int64_t b = 0; b < n / kIqGridBlockSize; ++b) decode_block(block[b], out + b * kIqGridBlockSize);
}

}  // namespace

void dequantize_row_iq2_xxs(const void* blocks, float* out, int64_t n) {
    for_each_block<BlockIq2xxs>(blocks, out, n, [](const BlockIq2xxs& block, float* y) {
        const float d = load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            const uint8_t* sub = block.qs + 8 * s;
            const uint32_t signs_scale = load_u32(sub + 4);
            const float scale = iq_half_step_scale(d, signs_scale >> 28, 0.25f);
            for (int g = 0; g < 4; ++g)
                decode_signed_group<8>(kIq2xxsGrid[sub[g]], iq_signs_from_7_bits((signs_scale >> (7 * g)) & 127),
                                       scale, y + 32 * s + 8 * g);
        }
    });
}

void dequantize_row_iq2_xs(const void* blocks, float* out, int64_t n) {
    for_each_block<BlockIq2xs>(blocks, out, n, [](const BlockIq2xs& block, float* y) {
        const float d = load_f16(block.d);
        for (int g = 0; g < 32; ++g) {
            const unsigned code = load_u16(block.qs + 2 * g);
            const float scale = iq_half_step_scale(d, iq2_sub_scale(block.scales, g / 2), 0.25f);
            decode_signed_group<8>(kIq2xsGrid[code & 511], iq_signs_from_7_bits(code >> 9), scale, y + 8 * g);
        }
    });
}

void dequantize_row_iq2_s(const void* blocks, float* out, int64_t n) {
    for_each_block<BlockIq2s>(blocks, out, n, [](const BlockIq2s& block, float* y) {
        const float d = load_f16(block.d);
        for (int g = 0; g < 32; ++g) {
            const unsigned index = block.grid_low[g] | ((block.qh[g / 4] >> (2 * (g % 4))) & 3) << 8;
            const float scale = iq_half_step_scale(d, iq2_sub_scale(block.scales, g / 2), 0.25f);
            decode_signed_group<8>(kIq2sGrid[index], block.signs[g], scale, y + 8 * g);
        }
    });
}

void dequantize_row_iq3_xxs(const void* blocks, float* out, int64_t n) {
    for_each_block<BlockIq3xxs>(blocks, out, n, [](const BlockIq3xxs& block, float* y) {
        const float d = load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            const uint32_t signs_scale = load_u32(block.scales_signs + 4 * s);
            const float scale = iq_half_step_scale(d, signs_scale >> 28, 0.5f);
            for (int p = 0; p < 4; ++p) {
                const unsigned signs = iq_signs_from_7_bits((signs_scale >> (7 * p)) & 127);
                const int k = 8 * s + 2 * p;
                decode_signed_group<4>(kIq3xxsGrid[block.qs[k]], signs, scale, y + 4 * k);
                decode_signed_group<4>(kIq3xxsGrid[block.qs[k + 1]], signs >> 4, scale, y + 4 * k + 4);
            }
        }
    });
}

void dequantize_row_iq3_s(const void* blocks, float* out, int64_t n) {
    for_each_block<BlockIq3s>(blocks, out, n, [](const BlockIq3s& block, float* y) {
        const float d = load_f16(block.d);
        for (int k = 0; k < 64; ++k) {
            const unsigned index = block.qs[k] | ((block.qh[k / 8] >> (k % 8)) & 1) << 8;
            const unsigned ls = (block.scales[k / 16] >> (4 * (k / 8 % 2))) & 15;
            decode_signed_group<4>(kIq3sGrid[index], block.signs[k / 2] >> (4 * (k % 2)), d * float(1 + 2 * ls),
                                   y + 4 * k);
        }
    });
}

void dequantize_row_iq1_s(const void* blocks, float* out, int64_t n) {
    for_each_block<BlockIq1s>(blocks, out, n, [](const BlockIq1s& block, float* y) {
        const float d = load_f16(block.d);
        for (int s = 0; s < 8; ++s) {
            const unsigned qh = load_u16(block.qh + 2 * s);
            const float scale = d * float(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
            for (int g = 0; g < 4; ++g)
                decode_iq1_group(kIq1sGrid[block.qs[4 * s + g] | ((qh >> (3 * g)) & 7) << 8], delta, scale,
                                 y + 32 * s + 8 * g);
        }
    });
}

void dequantize_row_iq1_m(const void* blocks, float* out, int64_t n) {
    for_each_block<BlockIq1m>(blocks, out, n, [](const BlockIq1m& block, float* y) {
        const float d = iq1m_block_scale(block);
        for (int g = 0; g < 32; ++g) {
            const unsigned ls = iq1m_sub_scale(block, g / 2);
            const unsigned qh = (block.qh[g / 2] >> (4 * (g % 2))) & 15;
            decode_iq1_group(kIq1sGrid[block.qs[g] | (qh & 7) << 8], qh & 8 ? -kIq1Delta : kIq1Delta,
                             d * float(2 * ls + 1), y + 8 * g);
        }
    });
}

}  // namespace k3::tensor
