// AMX int8 tile kernels for prefill (int_dot.h): a tile of 16 weight rows times 16 tokens, one
// block (32 values) deep, gives each (row, token) pair that block's exact int32 sum in one
// tdpbssd; the float combination is int_dot.h's, vectorised over the 16 tokens. Each slot's
// accumulators (block b goes to slot b % 8) stay in registers while the slot's blocks pass in
// increasing order, so every pair sees the scalar reference's float steps, bit for bit.
// Only called where amx_supported() (isa.cpp: CPUID and the OS's grant of the tile state).
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by
// self-initialization, which -Wuninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/int_dot.h"
#include "kernels/int_dot_formats.h"
#include "kernels/int_dot_q8k.h"

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#include "kernels/int_dot_simd.h"

namespace k3::kernels {

namespace {

constexpr int kTileRows = 16;
constexpr int kBlockValues = 32;
// A packed block of a token group (pack_act_amx): the B tile, row k holding for each token its
// values 4k..4k+3, then the tokens' scales.
struct PackedBlock {
    int8_t qs[kBlockValues / 4][kAmxTokens][4];
    float d[kAmxTokens];
};
static_assert(sizeof(PackedBlock) == 576);

// The scratch of one call: a row tile's weight levels (one A tile per block) and scales, the
// slots' sums, and the C tiles' int32 results.
struct TileScratch {
    int8_t* levels;  // [n_blocks][16][32]
    float* scales;   // [n_blocks][16]
    float* slots;    // [8][16 rows][16 tokens]
    int32_t* sums;   // [4][16 rows][16 tokens]
};

size_t levels_bytes(int64_t n_blocks) { return size_t(n_blocks) * kTileRows * kBlockValues; }
size_t scales_bytes(int64_t n_blocks) { return size_t(n_blocks) * kTileRows * sizeof(float); }
constexpr size_t kSlotsBytes = 8 * kTileRows * kAmxTokens * sizeof(float);
constexpr size_t kSumsBytes = 4 * kTileRows * kAmxTokens * sizeof(int32_t);

TileScratch split_scratch(void* scratch, int64_t n_blocks) {
    auto* bytes = static_cast<uint8_t*>(scratch);
    TileScratch s{};
    s.slots = reinterpret_cast<float*>(bytes);
    s.sums = reinterpret_cast<int32_t*>(bytes + kSlotsBytes);
    s.scales = reinterpret_cast<float*>(bytes + kSlotsBytes + kSumsBytes);
    s.levels = reinterpret_cast<int8_t*>(bytes + kSlotsBytes + kSumsBytes + scales_bytes(n_blocks));
    return s;
}

// The tile configuration (palette 1): tmm0-3 C (16 rows of 16 int32), tmm4 and tmm6 A (16 rows
// of one block), tmm5 and tmm7 B (8 rows of 16 tokens × 4 values).
struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {64, 64, 64, 64, 32, 64, 32, 64};
    uint8_t rows[16] = {16, 16, 16, 16, 16, 8, 16, 8};
};

// Rows [r0, r0 + rows) of the weights as A tiles (zero levels and scales past `rows`), each row
// read in order while the same row of the next tile is prefetched: the weights stream from
// memory, and the profile stalled on each row's loads without it.
template <typename F>
void decode_rows(const uint8_t* w, size_t w_stride, int rows, int64_t n_blocks, const TileScratch& s) {
    for (int r = 0; r < kTileRows; ++r) {
        const uint8_t* next = w + size_t(r + kTileRows) * w_stride;
        for (int64_t line = 0; line < n_blocks * F::kBytes; line += 64)
            _mm_prefetch(reinterpret_cast<const char*>(next + line), _MM_HINT_T1);
        for (int64_t b = 0; b < n_blocks; ++b) {
            int8_t* level = s.levels + (size_t(b) * kTileRows + size_t(r)) * kBlockValues;
            float* scale = s.scales + b * kTileRows + r;
            if (r >= rows) {
                std::memset(level, 0, kBlockValues);
                *scale = 0.0f;
                continue;
            }
            const uint8_t* block = w + size_t(r) * w_stride + size_t(b) * F::kBytes;
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(level), int_simd::levels<F>(block));
            *scale = int_formats::weight_scale<F>(block);
        }
    }
}

// One slot's blocks (first, first + 8, ...) for a token group: its 16 row accumulators (16 tokens
// each) fed block by block in order, four C tiles at a time, stored to s.slots[slot].
[[gnu::always_inline]] inline void slot_products(const PackedBlock* group, int64_t n_blocks, int slot, const TileScratch& s) {
    __m512 acc[kTileRows];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    const auto a_tile = [&](int64_t b) { return s.levels + size_t(b) * kTileRows * kBlockValues; };
    for (int64_t b = slot; b < n_blocks; b += 32) {
        const int count = int(std::min<int64_t>(4, (n_blocks - b + 7) / 8));
        // The tile registers are immediates of the instructions, hence a macro: C tile c gets
        // the block's A tile (in register a) times its B tile (in register b).
#define K3_TILE_PRODUCT(c, a, b, block)                       \
    _tile_zero(c);                                            \
    _tile_loadd(a, a_tile(block), kBlockValues);              \
    _tile_loadd(b, group + (block), 64);                      \
    _tile_dpbssd(c, a, b)
        K3_TILE_PRODUCT(0, 4, 5, b);
        if (count > 1) { K3_TILE_PRODUCT(1, 6, 7, b + 8); }
        if (count > 2) { K3_TILE_PRODUCT(2, 4, 5, b + 16); }
        if (count > 3) { K3_TILE_PRODUCT(3, 6, 7, b + 24); }
#undef K3_TILE_PRODUCT
        constexpr int kSumStride = kAmxTokens * sizeof(int32_t);
        _tile_stored(0, s.sums, kSumStride);
        if (count > 1) _tile_stored(1, s.sums + 256, kSumStride);
        if (count > 2) _tile_stored(2, s.sums + 512, kSumStride);
        if (count > 3) _tile_stored(3, s.sums + 768, kSumStride);
        for (int j = 0; j < count; ++j) {
            const int64_t block = b + 8 * j;
            const __m512 act_d = _mm512_loadu_ps(group[block].d);
            const float* w_d = s.scales + block * kTileRows;
            const int32_t* sums = s.sums + 256 * j;
            for (int r = 0; r < kTileRows; ++r) {
                const __m512 isum = _mm512_cvtepi32_ps(_mm512_loadu_si512(sums + r * kAmxTokens));
                acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(w_d[r]), act_d), isum, acc[r]);
            }
        }
    }
    float* out = s.slots + slot * kTileRows * kAmxTokens;
    for (int r = 0; r < kTileRows; ++r) _mm512_storeu_ps(out + r * kAmxTokens, acc[r]);
}

template <typename F>
void int_dot_amx(const void* weight_rows, size_t weight_stride, int64_t n_rows, const void* act_groups,
                 size_t group_stride, int64_t n_tokens, int64_t n, float* y, int64_t y_stride, void* scratch) {
    const int64_t n_blocks = n / kBlockValues;
    const TileScratch s = split_scratch(scratch, n_blocks);
    const TileConfig config;
    asm volatile("" ::: "memory");  // the whole configuration written before ldtilecfg reads it
    _tile_loadconfig(&config);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, n_rows - r0));
        decode_rows<F>(static_cast<const uint8_t*>(weight_rows) + size_t(r0) * weight_stride, weight_stride, rows, n_blocks, s);
        asm volatile("" ::: "memory");  // the levels stored before the tile loads read them
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kAmxTokens) {
            const auto* group = reinterpret_cast<const PackedBlock*>(static_cast<const uint8_t*>(act_groups) +
                                                                     size_t(t0 / kAmxTokens) * group_stride);
            for (int slot = 0; slot < 8; ++slot) slot_products(group, n_blocks, slot, s);
            // int_dot.h's reduce(acc), per row over the group's tokens.
            const auto slot_row = [&](int slot, int r) { return _mm512_loadu_ps(s.slots + (slot * kTileRows + r) * kAmxTokens); };
            const int tokens = int(std::min<int64_t>(kAmxTokens, n_tokens - t0));
            for (int r = 0; r < rows; ++r) {
                const __m512 v = _mm512_add_ps(
                    _mm512_add_ps(_mm512_add_ps(slot_row(0, r), slot_row(4, r)), _mm512_add_ps(slot_row(2, r), slot_row(6, r))),
                    _mm512_add_ps(_mm512_add_ps(slot_row(1, r), slot_row(5, r)), _mm512_add_ps(slot_row(3, r), slot_row(7, r))));
                alignas(64) float values[kAmxTokens];
                _mm512_store_ps(values, v);
                for (int t = 0; t < tokens; ++t) y[(t0 + t) * y_stride + r0 + r] = values[t];
            }
        }
    }
    _tile_release();  // the 8 KiB tile state need not be saved at context switches between calls
}

}  // namespace

size_t amx_group_bytes(ActivationFormat format, int64_t n) {
    if (format == ActivationFormat::q8_K) return amx_q8k_group_bytes(n);
    return size_t(n / kBlockValues) * sizeof(PackedBlock);
}

size_t amx_scratch_bytes(ActivationFormat format, int64_t n) {
    if (format == ActivationFormat::q8_K) return amx_q8k_scratch_bytes(n);
    const int64_t n_blocks = n / kBlockValues;
    return kSlotsBytes + kSumsBytes + scales_bytes(n_blocks) + levels_bytes(n_blocks);
}

void pack_act_amx(ActivationFormat format, const void* act_rows, size_t act_stride, int64_t n_tokens, int64_t n, void* out) {
    if (format == ActivationFormat::q8_K) return pack_act_amx_q8k(act_rows, act_stride, n_tokens, n, out);
    const int64_t n_blocks = n / kBlockValues;
    auto* packed = static_cast<PackedBlock*>(out);
    std::memset(out, 0, amx_group_bytes(format, n));
    for (int64_t t = 0; t < std::min<int64_t>(n_tokens, kAmxTokens); ++t) {
        const auto* blocks = reinterpret_cast<const ActBlockQ8_0*>(static_cast<const uint8_t*>(act_rows) + size_t(t) * act_stride);
        for (int64_t b = 0; b < n_blocks; ++b) {
            packed[b].d[t] = tensor::f16_to_f32(blocks[b].d);
            for (int k = 0; k < kBlockValues / 4; ++k) std::memcpy(packed[b].qs[k][t], blocks[b].qs + 4 * k, 4);
        }
    }
}

IntDotAmxFn int_dot_amx_kernel(tensor::Type weight) {
    if (!amx_supported()) return nullptr;
    using namespace int_formats;
    switch (weight) {
        case tensor::Type::Q8_0: return int_dot_amx<Q8_0>;
        case tensor::Type::MXFP4: return int_dot_amx<Mxfp4>;
        case tensor::Type::Q4_0: return int_dot_amx<Q4_0>;
        case tensor::Type::Q5_0: return int_dot_amx<Q5_0>;
        case tensor::Type::IQ4_NL: return int_dot_amx<Iq4Nl>;
        default: return amx_q8k_int_dot(weight);  // null for the offset formats (Q8_1 activations)
    }
}

}  // namespace k3::kernels
#pragma GCC pop_options
