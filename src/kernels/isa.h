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

// How decode's tiles prefetch the weights they read once (int_simd::DecodePrefetch).
// PREFETCHNTA keeps them out of L2 and L3: on AMD Zen 4 one thread's Q8_0 decode tile streamed
// 27 → 40 GB/s from DRAM with it. On Intel (Emerald Rapids, a VM) it made decode a third slower
// than PREFETCHT1: bench mock tg128 22.8 against 35.0 tokens/s at two threads, and 3.5 against
// 5.0 at one on a 56-layer mock that reads 2.1 GB a token, eight times the L3 (our guess: NTA
// lines skip L2, so its streamer does not follow the rows). Default: non_temporal on AMD CPUs,
// to_l2 on any other; K3_PREFETCH=nta|t1 overrides it (to measure a CPU), a value that is neither
// prints one notice and keeps the default.
enum class StreamPrefetch { non_temporal, to_l2 };
const char* stream_prefetch_name(StreamPrefetch hint);  // its K3_PREFETCH name: "nta" or "t1"
struct StreamPrefetchSelection {
    StreamPrefetch hint;
    std::string notice;
};
StreamPrefetchSelection select_stream_prefetch(const char* requested, bool amd_cpu);
// What this process uses (K3_PREFETCH and this CPU's vendor, read once).
StreamPrefetch stream_prefetch();

}  // namespace k3::kernels
