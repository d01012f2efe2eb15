// Expert residency under a memory budget (issue #7) on the model fixtures: logits with a budget
// that holds only three experts are byte-identical to those without one (whole sequence,
// token by token, greedy); the cache never holds more than its capacity; the `k3` options.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "model/fixture_cases.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/expert_cache.h"
#include "runtime/memory_budget.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace k3 {
namespace {

// trunk + working memory + room for `n_experts` of the largest expert: what the budget check
// (runtime/memory_budget.h) requires, plus one expert.
uint64_t budget_for_experts(const std::string& path, uint64_t n_experts) {
    const auto model = model::Model::load(path);
    return model->trunk_bytes() + runtime::estimate_working_bytes(model->hparams()) +
           n_experts * runtime::ExpertCache::largest_expert_bytes(model->file(), model->hparams());
}

std::unique_ptr<runtime::Engine> load(const std::string& path, uint64_t budget) {
    runtime::EngineOptions options;
    options.n_threads = 2;
    options.residency.mem_budget = budget;  // 0: none
    return runtime::Engine::load(path, options);
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ResidencyParity : public ::testing::TestWithParam<std::string> {};

TEST_P(ResidencyParity, LogitsUnderABudgetOfThreeExpertsAreByteIdentical) {
    const testing::ModelFixture fixture = testing::load_model_fixture(GetParam());
    const auto plain = load(fixture.model_path, 0);
    const auto budgeted = load(fixture.model_path, budget_for_experts(fixture.model_path, 3));
    ASSERT_FALSE(plain->expert_cache_counters());
    ASSERT_TRUE(budgeted->expert_cache_counters()) << "the budget did not switch to streaming experts";

    for (const testing::FixtureCase& c : fixture.cases) {
        SCOPED_TRACE(c.name);
        // Whole sequence in one batch.
        EXPECT_TRUE(same_bytes(plain->new_session()->eval(c.tokens, true), budgeted->new_session()->eval(c.tokens, true)));
        // Token by token, then greedy for as many tokens as the reference continuation; the
        // short cases only (every read of a streamed expert waits on the disk).
        if (c.prompt.size() > 48) continue;
        auto a = plain->new_session(), b = budgeted->new_session();
        std::vector<float> row_a, row_b;
        for (int32_t token : c.prompt) {
            row_a = a->eval(std::span(&token, 1));
            row_b = b->eval(std::span(&token, 1));
            ASSERT_TRUE(same_bytes(row_a, row_b)) << "position " << a->position();
        }
        for (size_t i = 0; i < c.generated.size(); ++i) {
            const int32_t next_a = runtime::argmax(row_a), next_b = runtime::argmax(row_b);
            ASSERT_EQ(next_a, next_b) << "greedy step " << i;
            row_a = a->eval(std::span(&next_a, 1));
            row_b = b->eval(std::span(&next_b, 1));
        }
    }
    const runtime::ExpertCacheCounters counters = *budgeted->expert_cache_counters();
    EXPECT_LE(counters.peak_bytes, counters.capacity);
    EXPECT_GT(counters.misses, 0u);
    // More was read than fits at once: entries were evicted and read again.
    EXPECT_GT(counters.bytes_read, 2 * counters.capacity);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ResidencyParity, ::testing::Values("tiny-k3", "tiny-k3-mxfp4", "tiny-k3-q4k"),
                         [](const auto& info) {
                             std::string name = info.param;
                             for (char& ch : name)
                                 if (ch == '-') ch = '_';
                             return name;
                         });

// --no-mmap reads a model that fits into memory whole: every routed expert is in the cache before
// the first token (no misses), and the logits are those of the mapped file, byte for byte.
TEST(NoMmap, EveryExpertIsReadAtLoadAndTheLogitsAreUnchanged) {
    const testing::ModelFixture fixture = testing::load_model_fixture("tiny-k3-mxfp4");
    const auto mapped = load(fixture.model_path, 0);
    runtime::EngineOptions options;
    options.n_threads = 2;
    options.residency.mem_budget = 0;
    options.residency.no_mmap = true;
    const auto read_in = runtime::Engine::load(fixture.model_path, options);
    ASSERT_TRUE(read_in->expert_cache_counters()) << "--no-mmap left the experts mapped";
    const runtime::ExpertCacheCounters loaded = *read_in->expert_cache_counters();
    const auto model = model::Model::load(fixture.model_path);
    uint64_t expert_bytes = 0;  // every routed expert's gate, up and down
    for (const model::LayerWeights& layer : model->weights().layers)
        if (layer.moe)
            for (const kernels::MatrixView* m : {&layer.moe->gate_exps, &layer.moe->up_exps, &layer.moe->down_exps})
                expert_bytes += uint64_t(m->rows) * m->row_stride;
    ASSERT_GT(expert_bytes, 0u);
    EXPECT_GE(loaded.bytes_read, expert_bytes) << "not every routed expert was read";
    EXPECT_GE(loaded.resident_bytes, expert_bytes);
    for (const testing::FixtureCase& c : fixture.cases) {
        SCOPED_TRACE(c.name);
        EXPECT_TRUE(same_bytes(mapped->new_session()->eval(c.tokens, true), read_in->new_session()->eval(c.tokens, true)));
    }
    const runtime::ExpertCacheCounters after = *read_in->expert_cache_counters();
    EXPECT_GT(after.hits, 0u);
    EXPECT_EQ(after.misses, 0u);
    EXPECT_EQ(after.bytes_read, loaded.bytes_read);
}

// Warm-up reports what it reads: with room for four experts, its closing line counts four.
TEST(ExpertCacheWarmUp, ReportsItsProgress) {
    const testing::ModelFixture fixture = testing::load_model_fixture("tiny-k3-mxfp4");
    const auto model = model::Model::load(fixture.model_path);
    const model::HParams& hp = model->hparams();
    runtime::ExpertCache cache(model->file(), hp,
                               4 * runtime::ExpertCache::largest_expert_bytes(model->file(), hp),
                               runtime::RoutingStats(hp.n_layer, hp.n_expert));
    std::FILE* log = std::tmpfile();
    ASSERT_NE(log, nullptr);
    cache.warm_up(runtime::ExpertWarmup::all, [](int64_t, int32_t) { return true; }, log);
    std::rewind(log);
    std::string text;
    for (int c; (c = std::fgetc(log)) != EOF;) text += char(c);
    std::fclose(log);
    EXPECT_NE(text.find("[4/4] 100.0%"), std::string::npos) << text;
}

// Warm-up loads only the experts this process runs (a parallel rank's own): with the odd experts
// accepted, the first MoE layer's expert 1 is resident and its expert 0 is not.
TEST(ExpertCacheWarmUp, LoadsOnlyTheExpertsThatRunHere) {
    const testing::ModelFixture fixture = testing::load_model_fixture("tiny-k3-mxfp4");
    const auto model = model::Model::load(fixture.model_path);
    const model::HParams& hp = model->hparams();
    int64_t first_moe = 0;
    while (!model->weights().layers[size_t(first_moe)].moe) ++first_moe;
    runtime::ExpertCache cache(model->file(), hp,
                               4 * runtime::ExpertCache::largest_expert_bytes(model->file(), hp),
                               runtime::RoutingStats(hp.n_layer, hp.n_expert));
    cache.warm_up(runtime::ExpertWarmup::all, [](int64_t, int32_t expert) { return expert % 2 == 1; });
    const int32_t experts[] = {0, 1};
    const int64_t token_counts[] = {1, 1};
    cache.request(first_moe, experts, token_counts);
    for (std::span<const model::ExpertMatrices> taken = cache.take_resident(); !taken.empty();
         taken = cache.take_resident()) {
        const std::vector<int32_t> handed_out = [&] {
            std::vector<int32_t> ids;
            for (const model::ExpertMatrices& m : taken) ids.push_back(m.expert);
            return ids;
        }();
        for (int32_t expert : handed_out) cache.release(expert);
    }
    EXPECT_EQ(cache.counters().hits, 1u);
    EXPECT_EQ(cache.counters().misses, 1u);
}

TEST(ResidencyCommand, EvalLogitsWithABudgetEqualThoseWithout) {
    const std::string model = testing::fixture("tiny-k3-q4k/model.gguf");
    const std::string budget = std::to_string(budget_for_experts(model, 4));
    testing::ScratchDir dir;
    const std::string tokens = "1000,72,101,108,108,111,44,32,119,111,114,108,100";
    for (const char* sequential : {"", "--sequential"}) {
        std::vector<std::string> plain_args = {"eval", "-m", model, "--tokens", tokens, "-t", "2", "--greedy", "6",
                                               "--mem-budget", "off", "--logits-out", dir.file("plain.f32")};
        std::vector<std::string> budget_args = {"eval", "-m", model, "--tokens", tokens, "-t", "2", "--greedy", "6",
                                                "--mem-budget", budget, "--logits-out", dir.file("budget.f32")};
        if (*sequential) {
            plain_args.push_back(sequential);
            budget_args.push_back(sequential);
        }
        const testing::CommandResult plain = testing::run_k3(plain_args), budgeted = testing::run_k3(budget_args);
        ASSERT_EQ(plain.exit_code, 0) << plain.err;
        ASSERT_EQ(budgeted.exit_code, 0) << budgeted.err;
        EXPECT_NE(budgeted.err.find("streaming experts"), std::string::npos) << budgeted.err;
        EXPECT_EQ(plain.out, budgeted.out);  // the greedy ids
        EXPECT_EQ(testing::read_bytes(dir.file("plain.f32")), testing::read_bytes(dir.file("budget.f32")));
    }
}

TEST(ResidencyCommand, NoMmapEvalEqualsTheMappedOne) {
    const std::string model = testing::fixture("tiny-k3-q4k/model.gguf");
    testing::ScratchDir dir;
    const std::string tokens = "1000,72,101,108,108,111,44,32,119,111,114,108,100";
    const auto eval = [&](const std::string& out, std::vector<std::string> extra) {
        std::vector<std::string> args = {"eval", "-m", model, "--tokens", tokens, "-t", "2", "--greedy", "6", "--logits-out", out};
        args.insert(args.end(), extra.begin(), extra.end());
        return testing::run_k3(args);
    };
    const testing::CommandResult mapped = eval(dir.file("mapped.f32"), {}), read_in = eval(dir.file("read.f32"), {"--no-mmap"});
    ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
    ASSERT_EQ(read_in.exit_code, 0) << read_in.err;
    EXPECT_NE(read_in.err.find("--no-mmap: reading the model"), std::string::npos) << read_in.err;
    EXPECT_EQ(mapped.err.find("--no-mmap"), std::string::npos) << mapped.err;
    EXPECT_EQ(mapped.out, read_in.out);  // the greedy ids
    EXPECT_EQ(testing::read_bytes(dir.file("mapped.f32")), testing::read_bytes(dir.file("read.f32")));
}

// k3 imatrix observes every product wherever its weights are read from (the resident trunk's
// copies, the expert cache's buffers), so a budget that streams experts writes the same file.
TEST(ResidencyCommand, ImatrixWithABudgetEqualsTheOneWithout) {
    const std::string model = testing::fixture("tiny-k3/model.gguf");
    const std::string text = std::string(K3_SOURCE_DIR) + "/tests/convert/data/imatrix-text.txt";
    testing::ScratchDir dir;
    std::vector<std::string> common = {"imatrix", "-m", model, "-f", text, "-c", "32", "--chunks", "2", "-t", "2"};
    std::vector<std::string> plain_args = common, budget_args = common;
    plain_args.insert(plain_args.end(), {"--mem-budget", "off", "-o", dir.file("plain.gguf")});
    budget_args.insert(budget_args.end(),
                       {"--mem-budget", std::to_string(budget_for_experts(model, 3)), "-o", dir.file("budget.gguf")});
    const testing::CommandResult plain = testing::run_k3(plain_args), budgeted = testing::run_k3(budget_args);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    ASSERT_EQ(budgeted.exit_code, 0) << budgeted.err;
    EXPECT_NE(budgeted.err.find("streaming experts"), std::string::npos) << budgeted.err;
    EXPECT_EQ(testing::read_bytes(dir.file("plain.gguf")), testing::read_bytes(dir.file("budget.gguf")));
}

TEST(ResidencyCommand, BudgetBelowTheTrunkIsAClearError) {
    const testing::CommandResult r = testing::run_k3(
        {"eval", "-m", testing::fixture("tiny-k3/model.gguf"), "--tokens", "1,2,3", "--mem-budget", "1M"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.signal, 0);
    EXPECT_NE(r.err.find("--mem-budget 1.00 MiB is below the"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("for the trunk (non-expert tensors)"), std::string::npos) << r.err;
}

TEST(ResidencyCommand, BenchReportsTheCacheAndStaysWithinTheBudget) {
    const std::string model = testing::fixture("tiny-k3-q4k/model.gguf");
    const uint64_t budget = budget_for_experts(model, 6);
    testing::ScratchDir dir;
    const std::string stats = dir.file("stats.json");
    const testing::CommandResult r =
        testing::run_k3({"bench", "-m", model, "--mem-budget", std::to_string(budget), "-p", "16", "-n", "8", "-r", "1",
                         "-t", "2", "--json", "--expert-stats", stats});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json out = nlohmann::json::parse(r.out);
    ASSERT_TRUE(out.contains("expert_cache")) << r.out;
    const nlohmann::json& cache = out["expert_cache"];
    EXPECT_LE(cache["peak_bytes"].get<uint64_t>(), cache["capacity_bytes"].get<uint64_t>());
    EXPECT_GE(cache["tg_hit_rate"].get<double>(), 0.0);
    EXPECT_LE(cache["tg_hit_rate"].get<double>(), 1.0);
    EXPECT_GT(cache["tg_disk_bytes_per_token"].get<double>(), 0.0);
#ifndef __SANITIZE_ADDRESS__  // AddressSanitizer's shadow memory and quarantine are not k3's
    // Peak RSS stays within the budget plus the process's baseline: the same command loading the
    // model without running it (code, libraries, the file's header pages).
    const testing::CommandResult idle = testing::run_k3(
        {"bench", "-m", model, "--mem-budget", "off", "-p", "0", "-n", "0", "-r", "1", "-t", "2", "--json"});
    ASSERT_EQ(idle.exit_code, 0) << idle.err;
    const double baseline = nlohmann::json::parse(idle.out)["peak_rss_bytes"].get<double>();
    EXPECT_LE(out["peak_rss_bytes"].get<double>(), double(budget) + baseline);
#endif

    // The statistics were saved at exit; a second run starts hot from them.
    const nlohmann::json saved = nlohmann::json::parse(testing::read_text(stats));
    EXPECT_EQ(saved["format"], "k3-expert-stats");
    const testing::CommandResult again =
        testing::run_k3({"bench", "-m", model, "--mem-budget", std::to_string(budget), "-p", "0", "-n", "4", "-r", "1",
                         "-t", "2", "--json", "--expert-stats", stats, "--warmup-experts", "hot"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
}

}  // namespace
}  // namespace k3
