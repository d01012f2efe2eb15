// K3_ISA: each level name caps the kernels; a name that is no level, or a level this CPU lacks,
// runs the best level there is and says so (never a kernel the CPU cannot run).
#include <gtest/gtest.h>

#include <string>

#include "kernels/isa.h"

namespace k3::kernels {
namespace {

Isa best_supported() {
    for (Isa isa : {Isa::avx512, Isa::avx2})
        if (isa_supported(isa)) return isa;
    return Isa::scalar;
}

// The K3_ISA name of the best selection there is.
std::string best_name() {
    if (amx_supported()) return "amx";
    return vbmi_supported() ? "avx512vbmi" : isa_name(best_supported());
}

TEST(IsaSelection, UnsetRunsTheBestLevelWithVbmiAndAmxWhereSupported) {
    const IsaSelection s = select_isa(nullptr);
    EXPECT_EQ(s.isa, best_supported());
    EXPECT_EQ(s.vbmi, vbmi_supported());
    EXPECT_EQ(s.amx, amx_supported());
    EXPECT_EQ(s.notice, "");
}

TEST(IsaSelection, EachLevelCapsTheKernels) {
    const IsaSelection scalar = select_isa("scalar");
    EXPECT_EQ(scalar.isa, Isa::scalar);
    EXPECT_FALSE(scalar.amx);
    EXPECT_EQ(scalar.notice, "");
    for (Isa isa : {Isa::avx2, Isa::avx512}) {
        const IsaSelection s = select_isa(isa_name(isa));
        EXPECT_FALSE(s.amx) << isa_name(isa) << " turns AMX off";
        EXPECT_FALSE(s.vbmi) << isa_name(isa) << " turns VBMI off";
        if (isa_supported(isa)) {
            EXPECT_EQ(s.isa, isa);
            EXPECT_EQ(s.notice, "");
        } else {
            EXPECT_EQ(s.isa, best_supported());
            EXPECT_EQ(s.notice, std::string("K3_ISA=") + isa_name(isa) + ": this CPU lacks it; running " +
                                    isa_name(best_supported()));
        }
    }
}

TEST(IsaSelection, Avx512VbmiTurnsAmxOffAndVbmiOnWhereTheCpuHasIt) {
    const IsaSelection s = select_isa("avx512vbmi");
    EXPECT_EQ(s.isa, best_supported());
    EXPECT_EQ(s.vbmi, vbmi_supported());
    EXPECT_FALSE(s.amx);
    if (vbmi_supported()) EXPECT_EQ(s.notice, "");
    else EXPECT_EQ(s.notice, std::string("K3_ISA=avx512vbmi: this CPU lacks it; running ") + isa_name(best_supported()));
}

TEST(IsaSelection, AmxWhereTheCpuHasItElseANotice) {
    const IsaSelection s = select_isa("amx");
    EXPECT_EQ(s.isa, best_supported());
    EXPECT_EQ(s.amx, amx_supported());
    if (amx_supported() && vbmi_supported()) EXPECT_EQ(s.notice, "");
    else EXPECT_EQ(s.notice, "K3_ISA=amx: this CPU lacks it; running " + best_name());
}

TEST(IsaSelection, AnUnknownNameRunsTheBestLevelWithANotice) {
    for (const char* name : {"avx9", "", "AVX2", "avx2 "}) {
        const IsaSelection s = select_isa(name);
        EXPECT_EQ(s.isa, best_supported()) << name;
        EXPECT_EQ(s.amx, amx_supported()) << name;
        EXPECT_EQ(s.notice, std::string("K3_ISA=") + name + " is not a level (scalar, avx2, avx512, avx512vbmi, amx); running " +
                                best_name())
            << name;
    }
}

TEST(StreamPrefetchSelection, NonTemporalOnAmdAndIntoL2ElsewhereUnlessK3PrefetchNamesOne) {
    EXPECT_EQ(select_stream_prefetch(nullptr, true).hint, StreamPrefetch::non_temporal);
    EXPECT_EQ(select_stream_prefetch(nullptr, false).hint, StreamPrefetch::to_l2);
    for (bool amd_cpu : {true, false}) {
        const StreamPrefetchSelection nta = select_stream_prefetch("nta", amd_cpu), t1 = select_stream_prefetch("t1", amd_cpu);
        EXPECT_EQ(nta.hint, StreamPrefetch::non_temporal);
        EXPECT_EQ(t1.hint, StreamPrefetch::to_l2);
        EXPECT_EQ(nta.notice + t1.notice, "");
    }
}

TEST(StreamPrefetchSelection, AnUnknownHintKeepsTheDefaultWithANotice) {
    const StreamPrefetchSelection amd = select_stream_prefetch("NTA", true), other = select_stream_prefetch("t0", false);
    EXPECT_EQ(amd.hint, StreamPrefetch::non_temporal);
    EXPECT_EQ(amd.notice, "K3_PREFETCH=NTA is not a hint (nta, t1); prefetching nta");
    EXPECT_EQ(other.hint, StreamPrefetch::to_l2);
    EXPECT_EQ(other.notice, "K3_PREFETCH=t0 is not a hint (nta, t1); prefetching t1");
}

}  // namespace
}  // namespace k3::kernels
