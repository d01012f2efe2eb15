// AMX int8 tile kernels for prefill of the 256-value formats × Q8_K (int_dot.h, "× Q8_K"). Each
// 16-row panel of weight blocks is decoded once (int_dot_q8k_simd.h's register decoders) into
// per-element products p = sc·level of the slot scale and the level, which fit int16, and stored
// as two A tiles per 64 values: p's low byte (unsigned, tdpbusd) and its high byte (signed,
// tdpbssd), so that isum_b = C_low + 256·C_high exactly; the offset formats add a third A tile
// holding each element's slot min, whose product with the activations is msum_b = Σ m_j·bsum_j.
// The panel serves every token group; each block's sums then take int_dot.h's two f32 fmas per
// (row, token), blocks in order, so every pair sees the scalar reference's float steps, bit for
// bit. Only called where amx_supported() (isa.cpp).
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/int_dot_q8k.h"

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#include "kernels/int_dot_q8k_simd.h"

namespace k3::kernels {

namespace {

constexpr int kTileRows = 16;
constexpr int kChunk = 64;                 // values per tile product (one A tile row)
constexpr int kChunks = 256 / kChunk;      // tile products per block
constexpr int kPanelTile = kTileRows * kChunk;  // bytes of one A tile

// A packed block of a token group (pack_act_amx_q8k): per chunk the B tile, row k holding for
// each token its values 4k..4k+3 of the chunk, then the tokens' scales.
struct PackedBlock {
    int8_t qs[kChunks][kChunk / 4][kAmxTokens][4];
    float d[kAmxTokens];
};
static_assert(sizeof(PackedBlock) == 4160);

// A decoded panel: per block and chunk the A tiles (low bytes, high bytes, slot mins), and per
// block the rows' d and dmin; then a run's accumulators and the C tiles' int32 results.
struct Panel {
    uint8_t* low;   // [n_blocks][kChunks][16][64]
    int8_t* high;   // same
    uint8_t* mins;  // same (the offset formats)
    float* d;       // [n_blocks][16]
    float* dmin;    // [n_blocks][16]
    int32_t* sums;  // [3][16 rows][16 tokens]
    __m512* acc;    // [kRunGroups][16 rows], 16 tokens each
    __m512* off;    // same
    float* values;  // [16 rows][16 tokens]
};

size_t tiles_bytes(int64_t n_blocks) { return size_t(n_blocks) * kChunks * kPanelTile; }
size_t factors_bytes(int64_t n_blocks) { return size_t(n_blocks) * kTileRows * sizeof(float); }
constexpr size_t kSumsBytes = 3 * kTileRows * kAmxTokens * sizeof(int32_t);
// Token groups multiplied with one block while its A tiles are in L1: their accumulators (2 KiB
// each) and the block's 12 KiB of tiles within L1's 48 KiB.
constexpr int kRunGroups = 8;
constexpr size_t kAccBytes = kRunGroups * kTileRows * sizeof(__m512);
constexpr size_t kValuesBytes = kTileRows * kAmxTokens * sizeof(float);

Panel split_scratch(void* scratch, int64_t n_blocks) {
    auto* bytes = static_cast<uint8_t*>(scratch);
    Panel p{};
    p.acc = reinterpret_cast<__m512*>(bytes);
    bytes += kAccBytes;
    p.off = reinterpret_cast<__m512*>(bytes);
    bytes += kAccBytes;
    p.values = reinterpret_cast<float*>(bytes);
    bytes += kValuesBytes;
    p.sums = reinterpret_cast<int32_t*>(bytes);
    bytes += kSumsBytes;
    p.d = reinterpret_cast<float*>(bytes);
    bytes += factors_bytes(n_blocks);
    p.dmin = reinterpret_cast<float*>(bytes);
    bytes += factors_bytes(n_blocks);
    p.low = bytes;
    p.high = reinterpret_cast<int8_t*>(bytes + tiles_bytes(n_blocks));
    p.mins = bytes + 2 * tiles_bytes(n_blocks);
    return p;
}

// The tile configuration (palette 1): tmm0-2 C (16 rows of 16 int32: low, high, mins), tmm3 B
// (16 rows of 16 tokens × 4 values), tmm4-6 A (16 rows of 64 values: low, high, mins).
struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64};
    uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16};
};

// Register k of a decoded block as signed levels (elements 32k..32k+31).
template <typename Format>
[[gnu::always_inline]] inline __m256i signed_levels(const q8k_simd::Decoded& w, int k) {
    using q8k_simd::Levels;
    constexpr Levels kLevels = q8k_simd::Simd<Format>::kLevels;
    if constexpr (kLevels == Levels::magnitudes_and_signs) return _mm256_sign_epi8(w.q[k], w.signs[k]);
    else if constexpr (kLevels == Levels::unsigned_levels && q8k_simd::Simd<Format>::kBiasShift >= 0)
        return _mm256_sub_epi8(w.q[k], _mm256_set1_epi8(char(1 << q8k_simd::Simd<Format>::kBiasShift)));
    else return w.q[k];
}

// Rows [r0, r0 + rows) of the weights as A tiles (zeros past `rows`), each row's blocks in order
// while the same row of the next panel is prefetched, as the × Q8_0 AMX kernel does.
template <typename Format>
void decode_panel(const uint8_t* w, size_t w_stride, int rows, int64_t n_blocks, const Panel& p) {
    using Block = typename Format::BlockType;
    for (int r = 0; r < kTileRows; ++r) {
        const uint8_t* next = w + size_t(r + kTileRows) * w_stride;
        for (int64_t line = 0; line < n_blocks * int64_t(sizeof(Block)); line += 64)
            _mm_prefetch(reinterpret_cast<const char*>(next + line), _MM_HINT_T1);
        for (int64_t b = 0; b < n_blocks; ++b) {
            const size_t at = size_t(b) * kChunks * kPanelTile + size_t(r) * kChunk;
            if (r >= rows) {
                for (int c = 0; c < kChunks; ++c) {
                    std::memset(p.low + at + c * kPanelTile, 0, kChunk);
                    std::memset(p.high + at + c * kPanelTile, 0, kChunk);
                    if constexpr (Format::kOffset) std::memset(p.mins + at + c * kPanelTile, 0, kChunk);
                }
                p.d[b * kTileRows + r] = p.dmin[b * kTileRows + r] = 0.0f;
                continue;
            }
            const Block& block = reinterpret_cast<const Block*>(w + size_t(r) * w_stride)[b];
            q8k_simd::Decoded decoded;
            q8k_simd::Simd<Format>::decode(block, decoded);
            const __m512i scales = _mm512_castsi256_si512(decoded.scales);
            // Per 128-bit lane of 8 int16: their low bytes, then their high bytes.
            const __m512i low_then_high = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
            // Decoded::mins holds slot j's min in lane j; each fits a byte: byte j of both halves.
            __m256i min_bytes = _mm256_setzero_si256();
            if constexpr (Format::kOffset) min_bytes = _mm256_broadcastsi128_si256(_mm256_cvtepi16_epi8(decoded.mins));
            for (int k = 0; k < 8; ++k) {
                // Decoded::scales holds slot 2k's scale in lane k and slot 2k+1's in lane 8 + k.
                const __m512i scale = _mm512_permutexvar_epi16(
                    _mm512_inserti64x4(_mm512_set1_epi16(int16_t(k)), _mm256_set1_epi16(int16_t(8 + k)), 1), scales);
                const __m512i product = _mm512_mullo_epi16(_mm512_cvtepi8_epi16(signed_levels<Format>(decoded, k)), scale);
                // The low bytes of the 32 products, then their high bytes (as int8: product >> 8).
                const __m512i bytes = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7),
                                                               _mm512_shuffle_epi8(product, low_then_high));
                const size_t to = at + size_t(k / 2) * kPanelTile + 32 * (k % 2);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.low + to), _mm512_castsi512_si256(bytes));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.high + to), _mm512_extracti64x4_epi64(bytes, 1));
                if constexpr (Format::kOffset)
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.mins + to),
                                        _mm256_shuffle_epi8(min_bytes, _mm256_set_m128i(_mm_set1_epi8(char(2 * k + 1)), _mm_set1_epi8(char(2 * k)))));
            }
            p.d[b * kTileRows + r] = q8k_formats::weight_factor<Format>(Format::d_bits(block));
            if constexpr (Format::kOffset) p.dmin[b * kTileRows + r] = q8k_formats::weight_factor<Format>(Format::dmin_bits(block));
        }
    }
}

// Block b of the decoded panel times one token group: the tile products, then per row the two
// fmas of int_dot.h over the group's 16 tokens (acc, off: the group's 16 rows).
template <typename Format>
[[gnu::always_inline]] inline void block_products(const PackedBlock& block, int64_t b, const Panel& p, __m512* acc, __m512* off) {
    constexpr int kSumStride = kAmxTokens * sizeof(int32_t);
    const size_t at = size_t(b) * kChunks * kPanelTile;
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (Format::kOffset) _tile_zero(2);
    for (int c = 0; c < kChunks; ++c) {
        _tile_loadd(3, block.qs[c], kAmxTokens * 4);
        _tile_loadd(4, p.low + at + c * kPanelTile, kChunk);
        _tile_dpbusd(0, 4, 3);
        _tile_loadd(5, p.high + at + c * kPanelTile, kChunk);
        _tile_dpbssd(1, 5, 3);
        if constexpr (Format::kOffset) {
            _tile_loadd(6, p.mins + at + c * kPanelTile, kChunk);
            _tile_dpbusd(2, 6, 3);
        }
    }
    _tile_stored(0, p.sums, kSumStride);
    _tile_stored(1, p.sums + 256, kSumStride);
    if constexpr (Format::kOffset) _tile_stored(2, p.sums + 512, kSumStride);
    const __m512 act_d = _mm512_loadu_ps(block.d);
    const float* w_d = p.d + b * kTileRows;
    const float* w_dmin = p.dmin + b * kTileRows;
    for (int r = 0; r < kTileRows; ++r) {
        const __m512i low = _mm512_loadu_si512(p.sums + r * kAmxTokens);
        const __m512i high = _mm512_loadu_si512(p.sums + 256 + r * kAmxTokens);
        const __m512 isum = _mm512_cvtepi32_ps(_mm512_add_epi32(low, _mm512_slli_epi32(high, 8)));
        acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(w_d[r]), act_d), isum, acc[r]);
        if constexpr (Format::kOffset) {
            const __m512 msum = _mm512_cvtepi32_ps(_mm512_loadu_si512(p.sums + 512 + r * kAmxTokens));
            off[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(w_dmin[r]), act_d), msum, off[r]);
        }
    }
}

// Rows [r0, r0 + rows) of y for one group's tokens: the 16×16 (row, token) results transposed
// through `values`, so that each token's rows go out in one masked store.
inline void store_group(const __m512* acc, const __m512* off, int rows, int tokens, float* values, float* y, int64_t y_stride) {
    for (int r = 0; r < kTileRows; ++r) _mm512_store_ps(values + r * kAmxTokens, _mm512_sub_ps(acc[r], off[r]));
    const __m512i row_starts = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                  _mm512_set1_epi32(kAmxTokens));
    const __mmask16 row_mask = __mmask16((1u << rows) - 1);
    for (int t = 0; t < tokens; ++t)
        _mm512_mask_storeu_ps(y + t * y_stride, row_mask, _mm512_i32gather_ps(row_starts, values + t, sizeof(float)));
}

template <typename Format>
void int_dot_amx(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_groups, size_t group_stride,
                 int64_t n_tokens, int64_t n, float* y, int64_t y_stride, void* scratch) {
    const int64_t n_blocks = n / 256;
    const Panel p = split_scratch(scratch, n_blocks);
    const int64_t n_groups = (n_tokens + kAmxTokens - 1) / kAmxTokens;
    const TileConfig config;
    asm volatile("" ::: "memory");  // the whole configuration written before ldtilecfg reads it
    _tile_loadconfig(&config);
    const auto group_at = [&](int64_t g) {
        return reinterpret_cast<const PackedBlock*>(static_cast<const uint8_t*>(act_groups) + size_t(g) * group_stride);
    };
    for (int64_t r0 = 0; r0 < n_rows; r0 += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, n_rows - r0));
        decode_panel<Format>(static_cast<const uint8_t*>(weight_rows) + size_t(r0) * weight_stride, weight_stride, rows, n_blocks, p);
        asm volatile("" ::: "memory");  // the panel stored before the tile loads read it
        // Blocks outside, a run of token groups inside: each block's A tiles stay in L1 for the run.
        for (int64_t g0 = 0; g0 < n_groups; g0 += kRunGroups) {
            const int64_t run = std::min<int64_t>(kRunGroups, n_groups - g0);
            for (int64_t i = 0; i < run * kTileRows; ++i) p.acc[i] = p.off[i] = _mm512_setzero_ps();
            for (int64_t b = 0; b < n_blocks; ++b)
                for (int64_t g = 0; g < run; ++g)
                    block_products<Format>(group_at(g0 + g)[b], b, p, p.acc + g * kTileRows, p.off + g * kTileRows);
            for (int64_t g = 0; g < run; ++g) {
                const int64_t t0 = (g0 + g) * kAmxTokens;
                store_group(p.acc + g * kTileRows, p.off + g * kTileRows, rows, int(std::min<int64_t>(kAmxTokens, n_tokens - t0)),
                            p.values, y + t0 * y_stride + r0, y_stride);
            }
        }
    }
    _tile_release();  // the 8 KiB tile state need not be saved at context switches between calls
}

}  // namespace

size_t amx_q8k_group_bytes(int64_t n) { return size_t(n / 256) * sizeof(PackedBlock); }

size_t amx_q8k_scratch_bytes(int64_t n) {
    const int64_t n_blocks = n / 256;
    return 2 * kAccBytes + kValuesBytes + kSumsBytes + 2 * factors_bytes(n_blocks) + 3 * tiles_bytes(n_blocks);
}

void pack_act_amx_q8k(const void* act_rows, size_t act_stride, int64_t n_tokens, int64_t n, void* out) {
    auto* packed = static_cast<PackedBlock*>(out);
    std::memset(out, 0, amx_q8k_group_bytes(n));
    for (int64_t t = 0; t < std::min<int64_t>(n_tokens, kAmxTokens); ++t) {
        const auto* blocks = reinterpret_cast<const ActBlockQ8_K*>(static_cast<const uint8_t*>(act_rows) + size_t(t) * act_stride);
        for (int64_t b = 0; b < n / 256; ++b) {
            packed[b].d[t] = blocks[b].d;
            for (int c = 0; c < kChunks; ++c)
                for (int k = 0; k < kChunk / 4; ++k) std::memcpy(packed[b].qs[c][k][t], blocks[b].qs + kChunk * c + 4 * k, 4);
        }
    }
}

IntDotAmxFn amx_q8k_int_dot(tensor::Type weight) {
    return q8k_formats::with_format<IntDotAmxFn>(weight, nullptr, []<typename F>() -> IntDotAmxFn { return &int_dot_amx<F>; });
}

}  // namespace k3::kernels
#pragma GCC pop_options
