#include "kernels/int_dot.h"

namespace k3::kernels {

namespace {

// The one table: weight type -> its kernel in each level's set. Adding a type is a row here
// (and its kernels, int_dot.h).
struct IntDotEntry {
    tensor::Type weight;
    IntDotFn IntDotKernels::*kernel;
    IntDotTileFn IntDotTileKernels::*tile;  // null: none
};
constexpr IntDotEntry kIntDotTable[] = {
    {tensor::Type::Q8_0, &IntDotKernels::q8_0, &IntDotTileKernels::q8_0},
    {tensor::Type::MXFP4, &IntDotKernels::mxfp4, &IntDotTileKernels::mxfp4},
    {tensor::Type::Q4_0, &IntDotKernels::q4_0, &IntDotTileKernels::q4_0},
    {tensor::Type::Q5_0, &IntDotKernels::q5_0, &IntDotTileKernels::q5_0},
    {tensor::Type::IQ4_NL, &IntDotKernels::iq4_nl, &IntDotTileKernels::iq4_nl},
    {tensor::Type::Q4_1, &IntDotKernels::q4_1, &IntDotTileKernels::q4_1},
    {tensor::Type::Q5_1, &IntDotKernels::q5_1, &IntDotTileKernels::q5_1},
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
    const IntDotEntry* entry = entry_of(weight);
    return kernels && entry ? kernels->*entry->kernel : nullptr;
}

IntDotFn int_dot_kernel(tensor::Type weight) { return int_dot_kernel(weight, best_isa()); }

IntDotTileFn int_dot_tile_kernel(tensor::Type weight, Isa isa) {
    const IntDotKernels* kernels = kernels_for(isa);
    const IntDotEntry* entry = entry_of(weight);
    if (!kernels || !entry || !entry->tile || kernels == &scalar_int_dot_kernels()) return nullptr;
    const IntDotTileKernels& tiles =
        kernels == &avx512_int_dot_kernels() ? avx512_int_dot_tile_kernels() : avx2_int_dot_tile_kernels();
    return tiles.*entry->tile;
}

IntDotTileFn int_dot_tile_kernel(tensor::Type weight) { return int_dot_tile_kernel(weight, best_isa()); }

const char* int_dot_level_name(Isa isa) {
    const IntDotKernels* kernels = kernels_for(isa);
    if (kernels == &avx512_int_dot_kernels()) return "avx512-vnni";
    if (kernels == &avx2_int_dot_kernels()) return "avx2";
    return "scalar";
}

}  // namespace k3::kernels
