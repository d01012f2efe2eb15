// `k3 bench`'s bandwidth probe: without a memory budget it runs right before generation, beside
// the model (a buffer of its own and the model's weights; the faster read counts), and its buffer
// (at least 256 MiB, four times the last-level cache) is no part of the peak RSS the command
// reports; a run without generation probes nothing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace k3 {
namespace {

// `k3 bench --json` on the tiny model: a 4-token prompt and n_gen generated tokens (null where
// the command failed).
nlohmann::json bench_tiny(const std::string& n_gen, const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"bench", "-m", testing::fixture("tiny-k3/model.gguf"), "--mem-budget", "off",
                                     "-p", "4", "-n", n_gen, "-r", "1", "-t", "2", "--json"};
    args.insert(args.end(), more.begin(), more.end());
    const testing::CommandResult r = testing::run_k3(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

TEST(BenchCommand, ProbesBeforeGenerationAndLeavesTheProbesBufferOutOfThePeak) {
    const nlohmann::json out = bench_tiny("4");
    ASSERT_TRUE(out.is_object());
    EXPECT_EQ(out["bandwidth_probe"], "before_generation");
    // Two reads, a buffer of the probe's own and the model's weights; the bound is the faster.
    const double buffer = out["buffer_read_bandwidth_bytes_per_s"].get<double>();
    const double weights = out["weight_read_bandwidth_bytes_per_s"].get<double>();
    EXPECT_GT(buffer, 0.0);
    EXPECT_GT(weights, 0.0);
    EXPECT_EQ(out["read_bandwidth_bytes_per_s"].get<double>(), std::max(buffer, weights));
    EXPECT_GT(out["bandwidth_bound_fraction"].get<double>(), 0.0);
    // Read through the mapping: the share of it in huge pages, a fraction.
    const double huge = out["mapped_weights_huge_page_fraction"].get<double>();
    EXPECT_GE(huge, 0.0);
    EXPECT_LE(huge, 1.0);
#ifndef __SANITIZE_ADDRESS__  // AddressSanitizer's shadow memory and quarantine are not k3's
    // The tiny model runs in a few MiB: a peak that counted the probe's buffer would pass 256 MiB.
    EXPECT_LT(out["peak_rss_bytes"].get<double>(), double(256 << 20));
#endif
}

// With --no-mmap the weights are read into memory k3 owns: nothing is read through the mapping,
// so no share of it in huge pages is reported.
TEST(BenchCommand, ReportsNoMappedHugePagesWithoutTheMapping) {
    const nlohmann::json out = bench_tiny("2", {"--no-mmap"});
    ASSERT_TRUE(out.is_object());
    EXPECT_FALSE(out.contains("mapped_weights_huge_page_fraction"));
    EXPECT_GT(out["tg_tokens_per_s"].get<double>(), 0.0);
}

// The bound is generation's: a prompt-only run reads no probe buffer (on a large machine the
// probe is seconds of untimed work) and reports no bandwidth.
TEST(BenchCommand, PromptOnlyRunProbesNothing) {
    const nlohmann::json out = bench_tiny("0");
    ASSERT_TRUE(out.is_object());
    EXPECT_EQ(out["bandwidth_probe"], "none");
    EXPECT_EQ(out["read_bandwidth_bytes_per_s"].get<double>(), 0.0);
    EXPECT_GT(out["pp_tokens_per_s"].get<double>(), 0.0);
}

}  // namespace
}  // namespace k3
