#include "kernels/isa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace k3::kernels {

bool isa_supported(Isa isa) {
#if defined(__x86_64__)
    switch (isa) {
        case Isa::scalar: return true;
        case Isa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                   __builtin_cpu_supports("f16c");
        case Isa::avx512:
            return isa_supported(Isa::avx2) && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    }
    return false;
#else
    return isa == Isa::scalar;
#endif
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
    }
    return "?";
}

namespace {

// CPUID leaf 7: EDX bit 24 AMX-TILE, bit 25 AMX-INT8 (GCC 12's __builtin_cpu_supports does
// not know them).
bool cpu_has_amx_int8() {
#if defined(__x86_64__)
    unsigned eax = 7, ebx, ecx = 0, edx;
    __asm__("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));
    return (edx >> 24 & 1) && (edx >> 25 & 1);
#else
    return false;
#endif
}

// Linux keeps the 8 KiB tile state off until a process asks for it (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); the grant covers every thread of the process.
bool os_grants_amx() {
#if defined(__linux__) && defined(__x86_64__)
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtileData = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
#else
    return false;
#endif
}

}  // namespace

bool amx_supported() {
    static const bool supported = isa_supported(Isa::avx512) && __builtin_cpu_supports("avx512vnni") &&
                                  cpu_has_amx_int8() && os_grants_amx();
    return supported;
}

bool vbmi_supported() {
#if defined(__x86_64__)
    static const bool supported = isa_supported(Isa::avx512) && __builtin_cpu_supports("avx512vnni") &&
                                  __builtin_cpu_supports("avx512vbmi");
    return supported;
#else
    return false;
#endif
}

const char* selection_name(const IsaSelection& selection) {
    return selection.amx ? "amx" : selection.vbmi ? "avx512vbmi" : isa_name(selection.isa);
}

IsaSelection select_isa(const char* requested) {
    struct Level {
        const char* name;
        Isa isa;
        bool vbmi, amx;
    };
    constexpr Level kLevels[] = {{"scalar", Isa::scalar, false, false},
                                 {"avx2", Isa::avx2, false, false},
                                 {"avx512", Isa::avx512, false, false},
                                 {"avx512vbmi", Isa::avx512, true, false},
                                 {"amx", Isa::avx512, true, true}};
    Level cap = kLevels[4];
    std::string notice;
    if (requested) {
        const Level* named = nullptr;
        for (const Level& level : kLevels)
            if (!std::strcmp(requested, level.name)) named = &level;
        if (named) cap = *named;
        else notice = std::string("K3_ISA=") + requested + " is not a level (scalar, avx2, avx512, avx512vbmi, amx)";
    }
    IsaSelection selection{Isa::scalar, false, false, {}};
    for (Isa isa : {Isa::avx512, Isa::avx2})
        if (int(isa) <= int(cap.isa) && isa_supported(isa)) {
            selection.isa = isa;
            break;
        }
    selection.vbmi = cap.vbmi && selection.isa == Isa::avx512 && vbmi_supported();
    selection.amx = cap.amx && selection.isa == Isa::avx512 && amx_supported();
    if (requested && notice.empty() && (selection.isa != cap.isa || selection.amx != cap.amx || selection.vbmi != cap.vbmi))
        notice = std::string("K3_ISA=") + requested + ": this CPU lacks it";
    if (!notice.empty()) selection.notice = notice + "; running " + selection_name(selection);
    return selection;
}

namespace {
const IsaSelection& selected() {
    static const IsaSelection selection = [] {
        IsaSelection s = select_isa(std::getenv("K3_ISA"));
        if (!s.notice.empty()) std::fprintf(stderr, "k3: %s\n", s.notice.c_str());
        return s;
    }();
    return selection;
}
}  // namespace

Isa best_isa() { return selected().isa; }

bool amx_enabled() { return selected().amx; }

bool vbmi_enabled() { return selected().vbmi; }

const char* stream_prefetch_name(StreamPrefetch hint) { return hint == StreamPrefetch::non_temporal ? "nta" : "t1"; }

StreamPrefetchSelection select_stream_prefetch(const char* requested, bool amd_cpu) {
    StreamPrefetchSelection selection{amd_cpu ? StreamPrefetch::non_temporal : StreamPrefetch::to_l2, {}};
    if (!requested) return selection;
    for (StreamPrefetch hint : {StreamPrefetch::non_temporal, StreamPrefetch::to_l2})
        if (!std::strcmp(requested, stream_prefetch_name(hint))) {
            selection.hint = hint;
            return selection;
        }
    selection.notice = std::string("K3_PREFETCH=") + requested + " is not a hint (nta, t1); prefetching " +
                       stream_prefetch_name(selection.hint);
    return selection;
}

StreamPrefetch stream_prefetch() {
    static const StreamPrefetch hint = [] {
#if defined(__x86_64__)
        const bool amd_cpu = __builtin_cpu_is("amd");
#else
        const bool amd_cpu = false;
#endif
        const StreamPrefetchSelection s = select_stream_prefetch(std::getenv("K3_PREFETCH"), amd_cpu);
        if (!s.notice.empty()) std::fprintf(stderr, "k3: %s\n", s.notice.c_str());
        return s.hint;
    }();
    return hint;
}

}  // namespace k3::kernels
