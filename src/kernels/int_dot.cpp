#include "kernels/int_dot.h"

#include <cstring>

#include "kernels/int_dot_q8k.h"
#include "tensor/float_formats.h"

namespace k3::kernels {

namespace {

// The one table: weight type -> its kernel in each level's set. Adding a type is a row here
// (and its kernels, int_dot.h).
struct IntDotEntry {
    tensor::Type weight;
    IntDotFn IntDotKernels::*kernel;
    IntDotTileFn IntDotTileKernels::*tile;  // null: none
    IntDotLanesFn IntDotTileKernels::*lanes;  // null: none
};
constexpr IntDotEntry kIntDotTable[] = {
    {tensor::Type::Q8_0, &IntDotKernels::q8_0, &IntDotTileKernels::q8_0, &IntDotTileKernels::lanes_q8_0},
    {tensor::Type::MXFP4, &IntDotKernels::mxfp4, &IntDotTileKernels::mxfp4, &IntDotTileKernels::lanes_mxfp4},
    {tensor::Type::Q4_0, &IntDotKernels::q4_0, &IntDotTileKernels::q4_0, &IntDotTileKernels::lanes_q4_0},
    {tensor::Type::Q5_0, &IntDotKernels::q5_0, &IntDotTileKernels::q5_0, &IntDotTileKernels::lanes_q5_0},
    {tensor::Type::IQ4_NL, &IntDotKernels::iq4_nl, &IntDotTileKernels::iq4_nl, &IntDotTileKernels::lanes_iq4_nl},
    {tensor::Type::Q4_1, &IntDotKernels::q4_1, &IntDotTileKernels::q4_1, &IntDotTileKernels::lanes_q4_1},
    {tensor::Type::Q5_1, &IntDotKernels::q5_1, &IntDotTileKernels::q5_1, &IntDotTileKernels::lanes_q5_1},
};

const IntDotEntry* entry_of(tensor::Type weight) {
    for (const IntDotEntry& entry : kIntDotTable)
        if (entry.weight == weight) return &entry;
    return nullptr;
}

bool has_avx512_vnni() {
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

const IntDotKernels* kernels_for(Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    switch (isa) {
        case Isa::scalar: return &scalar_int_dot_kernels();
        case Isa::avx2: return &avx2_int_dot_kernels();
        case Isa::avx512: return has_avx512_vnni() ? &avx512_int_dot_kernels() : &avx2_int_dot_kernels();
    }
    return nullptr;
}

}  // namespace

IntDotFn int_dot_kernel(tensor::Type weight, Isa isa) {
    const IntDotKernels* kernels = kernels_for(isa);
    if (!kernels) return nullptr;
    if (const IntDotEntry* entry = entry_of(weight)) return kernels->*entry->kernel;
    // The 256-value formats: one entry each in int_dot_q8k_formats.h's with_format.
    if (kernels == &scalar_int_dot_kernels()) return scalar_q8k_int_dot(weight);
    if (kernels == &avx2_int_dot_kernels()) return avx2_q8k_int_dot(weight);
    return avx512_q8k_int_dot(weight);
}

IntDotFn int_dot_kernel(tensor::Type weight) { return int_dot_kernel(weight, best_isa()); }

namespace {

const IntDotTileKernels* tile_kernels_for(Isa isa) {
    const IntDotKernels* kernels = kernels_for(isa);
    if (!kernels || kernels == &scalar_int_dot_kernels()) return nullptr;
    if (kernels != &avx512_int_dot_kernels()) return &avx2_int_dot_tile_kernels();
    return isa == best_isa() && vbmi_enabled() ? &avx512_vbmi_int_dot_tile_kernels() : &avx512_int_dot_tile_kernels();
}

}  // namespace

IntDotTileFn int_dot_tile_kernel(tensor::Type weight, Isa isa) {
    const IntDotTileKernels* tiles = tile_kernels_for(isa);
    const IntDotEntry* entry = entry_of(weight);
    if (tiles && !entry)  // the 256-value formats
        return tiles == &avx2_int_dot_tile_kernels() ? avx2_q8k_int_dot_tile(weight) : avx512_q8k_int_dot_tile(weight);
    return tiles && entry && entry->tile ? tiles->*entry->tile : nullptr;
}

IntDotTileFn int_dot_tile_kernel(tensor::Type weight, const IntDotTileKernels& set) {
    const IntDotEntry* entry = entry_of(weight);
    return entry && entry->tile ? set.*entry->tile : nullptr;
}

IntDotLanesFn int_dot_lanes_kernel(tensor::Type weight, Isa isa) {
    const IntDotTileKernels* tiles = tile_kernels_for(isa);
    const IntDotEntry* entry = entry_of(weight);
    if (tiles && !entry)  // the 256-value formats
        return tiles == &avx2_int_dot_tile_kernels() ? avx2_q8k_int_dot_lanes(weight) : avx512_q8k_int_dot_lanes(weight);
    return tiles && entry && entry->lanes ? tiles->*entry->lanes : nullptr;
}

IntDotLanesFn int_dot_lanes_kernel(tensor::Type weight) { return int_dot_lanes_kernel(weight, best_isa()); }

int64_t act_lane_groups(int64_t n) { return (n / 32 + 7) / 8; }

void pack_act_lanes(ActivationFormat format, const void* act_row, int64_t n, ActLaneGroup* out) {
    static const bool avx2 = best_isa() != Isa::scalar;  // every SIMD level has AVX2
    if (avx2) pack_act_lanes_avx2(format, act_row, n, out);
    else pack_act_lanes_scalar(format, act_row, n, out);
}

void pack_act_lanes_scalar(ActivationFormat format, const void* act_row, int64_t n, ActLaneGroup* out) {
    if (format == ActivationFormat::q8_K) {
        const auto* blocks = static_cast<const ActBlockQ8_K*>(act_row);
        for (int64_t g = 0; g < n / 256; ++g) {
            ActLaneGroup& group = out[g];
            group = {};
            for (int j = 0; j < 8; ++j) {
                group.d[j] = blocks[g].d;
                for (int k = 0; k < 8; ++k) std::memcpy(group.qs + 32 * k + 4 * j, blocks[g].qs + 32 * j + 4 * k, 4);
            }
            std::memcpy(group.bsums, blocks[g].bsums, sizeof(group.bsums));
            for (int j = 0; j < 8; ++j) group.sub_sums[j] = int16_t(group.bsums[2 * j] + group.bsums[2 * j + 1]);
        }
        return;
    }
    const auto* bytes = static_cast<const uint8_t*>(act_row);
    const size_t block_bytes = activation_block_bytes(format);
    const int64_t n_blocks = n / 32;
    for (int64_t g = 0; g < act_lane_groups(n); ++g) {
        ActLaneGroup& group = out[g];
        group = {};
        for (int j = 0; j < 8 && g * 8 + j < n_blocks; ++j) {
            const uint8_t* block = bytes + size_t(g * 8 + j) * block_bytes;
            uint16_t d, s;
            std::memcpy(&d, block, 2);
            group.d[j] = tensor::f16_to_f32(d);
            if (format == ActivationFormat::q8_1) {
                std::memcpy(&s, block + 2, 2);
                group.s[j] = tensor::f16_to_f32(s);
            }
            const uint8_t* qs = block + block_bytes - 32;
            for (int k = 0; k < 8; ++k) std::memcpy(group.qs + 32 * k + 4 * j, qs + 4 * k, 4);
            for (int i = 0; i < 32; ++i) group.sums[j] += int8_t(qs[i]);
        }
    }
}

IntDotTileFn int_dot_tile_kernel(tensor::Type weight) { return int_dot_tile_kernel(weight, best_isa()); }

const char* int_dot_level_name(Isa isa) {
    const IntDotKernels* kernels = kernels_for(isa);
    if (kernels == &avx512_int_dot_kernels()) {
        const bool selected = isa == best_isa();
        if (selected && vbmi_enabled()) return amx_enabled() ? "avx512-vnni+vbmi+amx" : "avx512-vnni+vbmi";
        return selected && amx_enabled() ? "avx512-vnni+amx" : "avx512-vnni";
    }
    if (kernels == &avx2_int_dot_kernels()) return "avx2";
    return "scalar";
}

}  // namespace k3::kernels
