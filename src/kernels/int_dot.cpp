#include "kernels/int_dot.h"

#include "kernels/int_dot_q8k.h"

namespace k3::kernels {

namespace {

// The one table: weight type -> its kernel in each level's set. Adding a type is a row here
// (and its kernels, int_dot.h).
struct IntDotEntry {
    tensor::Type weight;
    IntDotFn IntDotKernels::*kernel;
    IntDotRowsFn IntDotRowsKernels::*rows;  // null: none
};
constexpr IntDotEntry kIntDotTable[] = {
    {tensor::Type::Q8_0, &IntDotKernels::q8_0, &IntDotRowsKernels::q8_0},
    {tensor::Type::MXFP4, &IntDotKernels::mxfp4, &IntDotRowsKernels::mxfp4},
    {tensor::Type::Q4_0, &IntDotKernels::q4_0, &IntDotRowsKernels::q4_0},
    {tensor::Type::Q5_0, &IntDotKernels::q5_0, &IntDotRowsKernels::q5_0},
    {tensor::Type::IQ4_NL, &IntDotKernels::iq4_nl, &IntDotRowsKernels::iq4_nl},
    {tensor::Type::Q4_1, &IntDotKernels::q4_1, &IntDotRowsKernels::q4_1},
    {tensor::Type::Q5_1, &IntDotKernels::q5_1, &IntDotRowsKernels::q5_1},
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
    // The 256-value formats: one entry each in quant_unpack.h's with_format.
    if (kernels == &scalar_int_dot_kernels()) return scalar_q8k_int_dot(weight);
    if (kernels == &avx2_int_dot_kernels()) return avx2_q8k_int_dot(weight);
    return avx512_q8k_int_dot(weight);
}

IntDotFn int_dot_kernel(tensor::Type weight) { return int_dot_kernel(weight, best_isa()); }

IntDotRowsFn int_dot_rows_kernel(tensor::Type weight, Isa isa) {
    const IntDotKernels* kernels = kernels_for(isa);
    const IntDotEntry* entry = entry_of(weight);
    if (!kernels || kernels == &scalar_int_dot_kernels()) return nullptr;
    if (!entry)  // the 256-value formats
        return kernels == &avx512_int_dot_kernels() ? avx512_q8k_int_dot_rows(weight) : avx2_q8k_int_dot_rows(weight);
    if (!entry->rows) return nullptr;
    const IntDotRowsKernels& rows =
        kernels == &avx512_int_dot_kernels() ? avx512_int_dot_rows_kernels() : avx2_int_dot_rows_kernels();
    return rows.*entry->rows;
}

IntDotRowsFn int_dot_rows_kernel(tensor::Type weight) { return int_dot_rows_kernel(weight, best_isa()); }

const char* int_dot_level_name(Isa isa) {
    const IntDotKernels* kernels = kernels_for(isa);
    if (kernels == &avx512_int_dot_kernels()) return "avx512-vnni";
    if (kernels == &avx2_int_dot_kernels()) return "avx2";
    return "scalar";
}

}  // namespace k3::kernels
