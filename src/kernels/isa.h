// Instruction-set levels the kernels are built for, chosen at run time from CPUID so that one
// binary runs on any x86-64. K3_ISA=scalar|avx2|avx512|avx512vbmi|amx caps the level (for tests
// and triage):
// a level the CPU lacks falls back to the best level it has, and a name that is no level runs
// the best level; either prints one notice on stderr naming what runs instead.
// The integer kernels of Isa::avx512 also need AVX-512 VNNI; without it they run at AVX2.
// AVX-512 VBMI's byte permutes (Ice Lake, Zen 4 and later; not Skylake-X or Cascade Lake) are a
// capability on top of that for decode's 4-bit tiles: on by default where the CPU has them, off
// under K3_ISA=avx512 and below.
// AMX int8 tiles (Sapphire Rapids and later) are a capability on top of Isa::avx512 for the
// multi-token integer products (int_dot.h): on by default where the CPU and the OS allow them,
// off under any K3_ISA below amx.
#pragma once

#include <string>

namespace k3::kernels {

enum class Isa { scalar, avx2, avx512 };

bool isa_supported(Isa isa);  // this CPU can run kernels of that level
Isa best_isa();               // highest supported level, capped by K3_ISA
const char* isa_name(Isa isa);

// The CPU has AMX-INT8 tiles (and AVX-512 VNNI beside them) and the kernel granted this
// process the tile state (asked once, on the first call).
bool amx_supported();
// AMX tiles are used: supported and not capped away by K3_ISA.
bool amx_enabled();

// The CPU has AVX-512 VBMI beside the integer kernels' AVX-512 VNNI.
bool vbmi_supported();
// The VBMI kernels are used: supported and not capped away by K3_ISA.
bool vbmi_enabled();

// What K3_ISA=`requested` (null: unset) selects on this CPU, and the notice to print where that
// is not what was asked for (empty otherwise).
struct IsaSelection {
    Isa isa;
    bool vbmi, amx;
    std::string notice;
};
// The K3_ISA name of what a selection runs ("amx", "avx512vbmi", or its Isa's name).
const char* selection_name(const IsaSelection& selection);
IsaSelection select_isa(const char* requested);

}  // namespace k3::kernels
