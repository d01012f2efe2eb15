// `k3 bench`'s bandwidth probe: without a memory budget it runs right before generation, beside
// the model, and its buffer (at least 256 MiB, four times the last-level cache) is no part of
// the peak RSS the command reports; a run without generation probes nothing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace k3 {
namespace {

TEST(BenchCommand, ProbesBeforeGenerationAndLeavesTheProbesBufferOutOfThePeak) {
    const testing::CommandResult r = testing::run_k3({"bench", "-m", testing::fixture("tiny-k3/model.gguf"), "--mem-budget",
                                                      "off", "-p", "4", "-n", "4", "-r", "1", "-t", "2", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["bandwidth_probe"], "before_generation");
    EXPECT_GT(out["read_bandwidth_bytes_per_s"].get<double>(), 0.0);
    EXPECT_GT(out["bandwidth_bound_fraction"].get<double>(), 0.0);
#ifndef __SANITIZE_ADDRESS__  // AddressSanitizer's shadow memory and quarantine are not k3's
    // The tiny model runs in a few MiB: a peak that counted the probe's buffer would pass 256 MiB.
    EXPECT_LT(out["peak_rss_bytes"].get<double>(), double(256 << 20));
#endif
}

// The bound is generation's: a prompt-only run reads no probe buffer (on a large machine the
// probe is seconds of untimed work) and reports no bandwidth.
TEST(BenchCommand, PromptOnlyRunProbesNothing) {
    const testing::CommandResult r = testing::run_k3({"bench", "-m", testing::fixture("tiny-k3/model.gguf"), "--mem-budget",
                                                      "off", "-p", "4", "-n", "0", "-r", "1", "-t", "2", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["bandwidth_probe"], "none");
    EXPECT_EQ(out["read_bandwidth_bytes_per_s"].get<double>(), 0.0);
    EXPECT_GT(out["pp_tokens_per_s"].get<double>(), 0.0);
}

}  // namespace
}  // namespace k3
