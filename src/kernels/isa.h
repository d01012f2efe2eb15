// Instruction-set levels the kernels are built for, chosen at run time from CPUID so that one
// binary runs on any x86-64. K3_ISA=scalar|avx2|avx512 caps the level (for tests and triage):
// a cap above what the CPU has falls back to the best level it has, never to a kernel it lacks.
// The integer kernels of Isa::avx512 also need AVX-512 VNNI; without it they run at AVX2.
#pragma once

namespace k3::kernels {

enum class Isa { scalar, avx2, avx512 };

bool isa_supported(Isa isa);  // this CPU can run kernels of that level
Isa best_isa();               // highest supported level, capped by K3_ISA
const char* isa_name(Isa isa);

}  // namespace k3::kernels
