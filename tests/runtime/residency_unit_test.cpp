// Pieces of expert residency (issue #7) with independent expectations: the decayed-frequency
// eviction choice on a fixed trace, statistics files, cgroup and meminfo parsing, the budget split.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "runtime/memory_budget.h"
#include "runtime/routing_stats.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::runtime {
namespace {

void visit(RoutingStats& stats, int64_t il, std::vector<int32_t> experts, std::vector<int64_t> counts) {
    stats.record(il, experts, counts);
}

TEST(RoutingStats, DecayHalvesPerVisitOfTheLayerAtHalfLifeOne) {
    RoutingStats stats(2, 4, /*half_life=*/1.0);
    visit(stats, 0, {0}, {4});
    visit(stats, 0, {1}, {1});
    visit(stats, 0, {2}, {2});
    // By hand: e0 = 4 * 0.5^2 = 1, e1 = 1 * 0.5 = 0.5, e2 = 2, e3 = 0
    EXPECT_DOUBLE_EQ(stats.score(0, 0), 1.0);
    EXPECT_DOUBLE_EQ(stats.score(0, 1), 0.5);
    EXPECT_DOUBLE_EQ(stats.score(0, 2), 2.0);
    EXPECT_DOUBLE_EQ(stats.score(0, 3), 0.0);
    // Layer 1 has its own clock: layer 0's visits do not age it.
    visit(stats, 1, {3}, {1});
    visit(stats, 0, {}, {});
    EXPECT_DOUBLE_EQ(stats.score(1, 3), 1.0);
    EXPECT_DOUBLE_EQ(stats.score(0, 2), 1.0);
}

TEST(RoutingStats, EvictsTheLowestDecayedScore) {
    RoutingStats stats(2, 4, 1.0);
    visit(stats, 0, {0}, {4});
    visit(stats, 0, {1}, {1});
    visit(stats, 0, {2}, {2});
    const std::vector<ExpertKey> layer0 = {{0, 0}, {0, 1}, {0, 2}};
    EXPECT_EQ(stats.lowest(layer0), (ExpertKey{0, 1}));  // 1, 0.5, 2
    visit(stats, 0, {1}, {1});                          // 0.5, 1.25, 1
    EXPECT_EQ(stats.lowest(layer0), (ExpertKey{0, 0}));
    // A frequently used expert outlives a recently used one once enough time has passed:
    // e0 gains 8 now, e2 gains 1 later.
    visit(stats, 0, {0}, {8});  // 8.25, 0.625, 0.5
    visit(stats, 0, {2}, {1});  // 4.125, 0.3125, 1.25
    EXPECT_EQ(stats.lowest(std::vector<ExpertKey>{{0, 0}, {0, 2}}), (ExpertKey{0, 2}));
    // Ties (never used): the higher layer, then the higher expert id, goes first.
    EXPECT_EQ(stats.lowest(std::vector<ExpertKey>{{0, 3}, {1, 0}, {1, 2}}), (ExpertKey{1, 2}));
}

TEST(RoutingStats, SaveLoadRoundTrip) {
    RoutingStats stats(3, 5, 8.0);
    visit(stats, 1, {0, 4}, {3, 1});
    visit(stats, 2, {2}, {7});
    visit(stats, 1, {4}, {2});
    testing::ScratchDir dir;
    const std::string path = dir.file("stats.json");
    stats.save(path);
    const RoutingStats loaded = RoutingStats::load(path, 3, 5, 8.0);
    for (int64_t il = 0; il < 3; ++il)
        for (int32_t e = 0; e < 5; ++e) EXPECT_DOUBLE_EQ(loaded.score(il, e), stats.score(il, e)) << il << "," << e;
    EXPECT_DOUBLE_EQ(loaded.score(1, 0), 3.0 * std::exp2(-1.0 / 8.0));
    EXPECT_FALSE(loaded.empty());
    EXPECT_TRUE(RoutingStats(3, 5).empty());
}

TEST(RoutingStats, FileForAnotherShapeNamesBoth) {
    testing::ScratchDir dir;
    const std::string path = dir.file("stats.json");
    RoutingStats(3, 5).save(path);
    try {
        RoutingStats::load(path, 16, 128);
        FAIL() << "expected k3::Error";
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("3 layers x 5 experts"), std::string::npos) << message;
        EXPECT_NE(message.find("16 layers x 128 experts"), std::string::npos) << message;
    }
    std::ofstream(dir.file("junk.json")) << "{\"hello\": 1}";
    EXPECT_THROW(RoutingStats::load(dir.file("junk.json"), 3, 5), Error);
}

TEST(MemoryBudget, CgroupLimitFiles) {
    EXPECT_EQ(parse_cgroup_limit("max\n"), std::nullopt);                       // v2, unlimited
    EXPECT_EQ(parse_cgroup_limit("1814036480\n"), uint64_t(1814036480));        // v2 memory.max
    EXPECT_EQ(parse_cgroup_limit("9223372036854771712\n"), std::nullopt);       // v1, unlimited
    EXPECT_EQ(parse_cgroup_limit("1073741824"), uint64_t(1) << 30);             // v1, 1 GiB
    EXPECT_EQ(parse_cgroup_limit(""), std::nullopt);
    EXPECT_EQ(parse_cgroup_limit("12abc"), std::nullopt);
}

TEST(MemoryBudget, ProcCgroupPaths) {
    const CgroupPaths v2 = parse_proc_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n");
    EXPECT_EQ(v2.v2, "/user.slice/user-1000.slice/session-2.scope");
    EXPECT_EQ(v2.v1, std::nullopt);
    const CgroupPaths v1 = parse_proc_cgroup(
        "12:cpu,cpuacct:/\n9:name=systemd:/\n4:memory:/process_api/68cb\n2:cpuset:/\n0::/\n");
    EXPECT_EQ(v1.v1, "/process_api/68cb");
    EXPECT_EQ(v1.v2, "/");
    EXPECT_EQ(parse_proc_cgroup("7:blkio,memory:/k3cap\n").v1, "/k3cap");
}

TEST(MemoryBudget, MemAvailable) {
    EXPECT_EQ(parse_mem_available("MemTotal:       24684092 kB\nMemFree:  100 kB\nMemAvailable:   24202928 kB\n"),
              uint64_t(24202928) * 1024);
    EXPECT_EQ(parse_mem_available("MemTotal: 1 kB\n"), std::nullopt);
}

TEST(MemoryBudget, MarginIsFivePercentOr64MiB) {
    const uint64_t MiB = uint64_t(1) << 20;
    EXPECT_EQ(budget_from_limit(10240 * MiB), 9728 * MiB);  // 5% = 512 MiB
    EXPECT_EQ(budget_from_limit(1024 * MiB), 960 * MiB);    // 64 MiB > 5%
    EXPECT_EQ(budget_from_limit(50 * MiB), 0u);
}

TEST(MemoryBudget, SplitLeavesTheRestToTheCacheOrNamesTheSizes) {
    const uint64_t MiB = uint64_t(1) << 20;
    const BudgetSplit split = split_budget("--mem-budget", 1000 * MiB, 412 * MiB, 80 * MiB, 6 * MiB);
    EXPECT_EQ(split.cache_capacity, 508 * MiB);
    try {
        split_budget("--mem-budget", 300 * MiB, 412 * MiB, 80 * MiB, 6 * MiB);
        FAIL() << "expected k3::Error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--mem-budget 300.00 MiB is below the 504.00 MiB this model needs: 412.00 MiB for the "
                               "trunk (non-expert tensors) + 80.00 MiB working memory + 2 x 6.00 MiB (the largest "
                               "expert, twice)");
    }
}

}  // namespace
}  // namespace k3::runtime
