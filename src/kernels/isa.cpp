#include "kernels/isa.h"

#include <cstdlib>
#include <initializer_list>
#include <cstring>

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
Isa detect() {
    Isa cap = Isa::avx512;
    if (const char* env = std::getenv("K3_ISA")) {
        if (!std::strcmp(env, "scalar")) cap = Isa::scalar;
        else if (!std::strcmp(env, "avx2")) cap = Isa::avx2;
    }
    for (Isa isa : {Isa::avx512, Isa::avx2}) {
        if (int(isa) <= int(cap) && isa_supported(isa)) return isa;
    }
    return Isa::scalar;
}
}  // namespace

Isa best_isa() {
    static const Isa isa = detect();
    return isa;
}

}  // namespace k3::kernels
