// Parallel jobs on OpenMPI (issue #17): every fixture model computes, on 2 and 4 ranks, the
// logits one process computes (several sequences, one prompt batch, then token by token) and
// picks the same greedy tokens; a rank that cannot load, loads another file or never reports
// ends the whole job with an error naming it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "model/fixture_cases.h"
#include "model/kda.h"
#include "model/model.h"
#include "model/shard.h"
#include "parallel/collective.h"
#include "runtime/engine.h"
#include "runtime/expert_cache.h"
#include "runtime/memory_budget.h"
#include "runtime/routing_stats.h"
#include "runtime/sampler.h"
#include "runtime/scheduler.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

const char* const kModelFixtures[] = {"tiny-k3", "tiny-k3-mxfp4", "tiny-k3-native", "tiny-k3-q4k"};
constexpr float kTolerance = 1e-4f;  // the bound; the row-split products are in fact exact
constexpr int kDecodeSteps = 6;

// Set by ParallelJob on the ranks it starts: ParallelRank's test then runs as one of them.
constexpr const char* kRankVariable = "K3_PARALLEL_RANK";

// This rank's job, started once per process (MPI cannot be initialised twice) for every ParallelRank test.
parallel::Collective& rank_job() {
    static const std::unique_ptr<parallel::Collective> collective = parallel::start_mpi();
    return *collective;
}

// One rank of a job: each fixture loaded alone and as this rank, the fixture's cases as one batch
// of sequences, then kDecodeSteps greedy steps with every sequence in each batch.
TEST(ParallelRank, FixtureLogitsMatchOneProcess) {
    if (!std::getenv(kRankVariable)) GTEST_SKIP() << "runs as a rank of ParallelJob's mpirun jobs";
    parallel::Collective* const collective = &rank_job();
    for (const char* dir : kModelFixtures) {
        SCOPED_TRACE(dir);
        const ModelFixture fixture = load_model_fixture(dir);
        runtime::EngineOptions alone_options;
        alone_options.n_threads = 1;
        runtime::EngineOptions rank_options = alone_options;
        rank_options.collective = collective;
        const auto alone = runtime::Engine::load(fixture.model_path, alone_options);
        const auto rank = runtime::Engine::load(fixture.model_path, rank_options);

        std::vector<std::unique_ptr<runtime::Session>> alone_sessions, rank_sessions;
        std::vector<runtime::SequenceInput> alone_batch, rank_batch;
        for (const FixtureCase& c : fixture.cases) {
            alone_sessions.push_back(alone->new_session());
            rank_sessions.push_back(rank->new_session());
            alone_batch.push_back({alone_sessions.back().get(), c.prompt, true, {}});
            rank_batch.push_back({rank_sessions.back().get(), c.prompt, true, {}});
        }
        alone->decode(alone_batch);
        rank->decode(rank_batch);
        const size_t V = size_t(alone->n_vocab());
        std::vector<int32_t> next(fixture.cases.size());
        for (size_t i = 0; i < fixture.cases.size(); ++i) {
            const std::vector<float>& expected = alone_batch[i].logits;
            ASSERT_EQ(rank_batch[i].logits.size(), expected.size());
            EXPECT_LE(max_abs_diff(rank_batch[i].logits.data(), expected.data(), int64_t(expected.size())), kTolerance)
                << fixture.cases[i].name << " prompt";
            next[i] = runtime::argmax(std::span(expected).last(V));
        }
        for (int step = 0; step < kDecodeSteps; ++step) {
            for (size_t i = 0; i < next.size(); ++i) {
                alone_batch[i].tokens = rank_batch[i].tokens = std::span(&next[i], 1);
                alone_batch[i].all_logits = rank_batch[i].all_logits = false;
            }
            alone->decode(alone_batch);
            rank->decode(rank_batch);
            for (size_t i = 0; i < next.size(); ++i) {
                const std::vector<float>& expected = alone_batch[i].logits;
                EXPECT_LE(max_abs_diff(rank_batch[i].logits.data(), expected.data(), int64_t(V)), kTolerance)
                    << fixture.cases[i].name << " decode step " << step;
                next[i] = runtime::argmax(expected);
                EXPECT_EQ(runtime::argmax(rank_batch[i].logits), next[i]) << fixture.cases[i].name << " step " << step;
            }
        }
    }
}

// Two answers through a scheduler of `engine`: one its sink ends after kStopAfter tokens (as a
// stop string would), then a second turn that resumes from the first's cached prompt.
constexpr size_t kStopAfter = 3;
struct LedAnswers {
    std::vector<int32_t> first, second;
    int64_t second_cached = 0;
};
LedAnswers answer_two_turns(const runtime::Engine& engine, const std::vector<int32_t>& prompt) {
    runtime::SchedulerOptions options;
    options.cache.checkpoint_every = model::kKdaChunk;
    runtime::Scheduler scheduler(engine, options);
    runtime::GenerationRequest request;
    request.prompt = prompt;
    request.params.sampling.temperature = 0;  // greedy
    request.params.max_tokens = 64;
    LedAnswers answers;
    const runtime::GenerationResult first = runtime::generate(scheduler, request, [&](const runtime::SampledToken& t) {
        answers.first.push_back(t.id);
        return answers.first.size() < kStopAfter;
    });
    EXPECT_EQ(first.summary.finish, runtime::FinishReason::stop_string);
    request.prompt.insert(request.prompt.end(), answers.first.begin(), answers.first.end());
    request.prompt.insert(request.prompt.end(), prompt.begin(), prompt.end());
    request.params.max_tokens = 6;
    const runtime::GenerationResult second = runtime::generate(scheduler, request, [](const runtime::SampledToken&) { return true; });
    answers.second = second.tokens;
    answers.second_cached = second.summary.n_cached;
    return answers;
}

// One rank of a job that rank 0 leads: it answers through its scheduler and prompt cache while
// the other ranks follow. They must have run exactly rank 0's passes (as many collectives) and
// have stopped when its answer stopped; rank 0's answers must be one process's.
TEST(ParallelRank, FollowersRunRankZerosPasses) {
    if (!std::getenv(kRankVariable)) GTEST_SKIP() << "runs as a rank of ParallelJob's mpirun jobs";
    parallel::Collective* const collective = &rank_job();
    const ModelFixture fixture = load_model_fixture("tiny-k3");
    // Long enough to hold a checkpoint at a KDA chunk boundary before its end.
    std::vector<int32_t> prompt;
    while (prompt.size() < size_t(model::kKdaChunk) + 8)
        prompt.insert(prompt.end(), fixture.cases[0].prompt.begin(), fixture.cases[0].prompt.end());
    runtime::EngineOptions options;
    options.n_threads = 1;
    LedAnswers alone;
    if (collective->rank() == 0) alone = answer_two_turns(*runtime::Engine::load(fixture.model_path, options), prompt);
    options.collective = collective;
    options.followers = true;
    const uint64_t calls_before = collective->counters().calls;  // the job's earlier tests ran some
    LedAnswers led;
    {
        const auto engine = runtime::Engine::load(fixture.model_path, options);
        ASSERT_EQ(engine->follower(), collective->rank() != 0);
        if (engine->follower()) engine->follow();
        else led = answer_two_turns(*engine, prompt);
    }
    const std::vector<std::string> calls =
        collective->allgather_bytes(std::to_string(collective->counters().calls - calls_before), std::chrono::seconds(60));
    for (size_t r = 1; r < calls.size(); ++r) EXPECT_EQ(calls[r], calls[0]) << "rank " << r;
    EXPECT_NE(calls[0], "0");
    if (collective->rank() != 0) return;
    EXPECT_EQ(led.first.size(), kStopAfter);
    EXPECT_EQ(led.first, alone.first);
    EXPECT_EQ(led.second, alone.second);
    EXPECT_GT(led.second_cached, 0);
    EXPECT_EQ(led.second_cached, alone.second_cached);
}

// A job in which only rank 0 samples (logits_on_root_only) gets the logits on rank 0 alone,
// zeros elsewhere; and routing statistics skewed towards the low expert ids (an --expert-stats
// file) move experts between the ranks without changing a logit.
TEST(ParallelRank, RootOnlyLogitsAndBalancedExpertsMatchOneProcess) {
    if (!std::getenv(kRankVariable)) GTEST_SKIP() << "runs as a rank of ParallelJob's mpirun jobs";
    parallel::Collective* const collective = &rank_job();
    const ScratchDir scratch;
    for (const char* dir : {"tiny-k3", "tiny-k3-native"}) {
        SCOPED_TRACE(dir);
        const ModelFixture fixture = load_model_fixture(dir);
        const model::HParams hp = model::Model::load(fixture.model_path)->hparams();
        runtime::RoutingStats stats(hp.n_layer, hp.n_expert);
        std::vector<int32_t> experts(size_t(hp.n_expert));
        std::vector<int64_t> counts(size_t(hp.n_expert));
        for (int32_t e = 0; e < hp.n_expert; ++e) {
            experts[size_t(e)] = e;
            counts[size_t(e)] = int64_t(hp.n_expert - e) * (hp.n_expert - e);  // low ids chosen most
        }
        for (int64_t il = 0; il < hp.n_layer; ++il) stats.record(il, experts, counts);
        const std::string stats_path = scratch.file(std::string(dir) + ".stats.json");
        stats.save(stats_path);

        runtime::EngineOptions alone_options;
        alone_options.n_threads = 1;
        runtime::EngineOptions rank_options = alone_options;
        rank_options.collective = collective;
        rank_options.logits_on_root_only = true;
        rank_options.residency.expert_stats_path = stats_path;
        const auto alone = runtime::Engine::load(fixture.model_path, alone_options);
        const auto rank = runtime::Engine::load(fixture.model_path, rank_options);
        auto alone_session = alone->new_session();
        auto rank_session = rank->new_session();
        std::vector<int32_t> tokens = fixture.cases.front().prompt;
        for (int step = 0; step <= kDecodeSteps; ++step) {
            runtime::SequenceInput alone_input{alone_session.get(), tokens, false, {}};
            runtime::SequenceInput rank_input{rank_session.get(), tokens, false, {}};
            alone->decode(std::span(&alone_input, 1));
            rank->decode(std::span(&rank_input, 1));
            ASSERT_EQ(rank_input.logits.size(), alone_input.logits.size());
            if (collective->rank() == 0)
                EXPECT_EQ(rank_input.logits, alone_input.logits) << "step " << step;
            else
                EXPECT_EQ(rank_input.logits, std::vector<float>(alone_input.logits.size(), 0.0f)) << "step " << step;
            tokens = {runtime::argmax(alone_input.logits)};
        }
    }
}

// A rank whose share does not fit its budget streams its own experts and keeps only its share of
// the heads' matrices resident: a budget below what the whole trunk needs, yet the logits one
// process computes without a budget.
TEST(ParallelRank, StreamingRankHoldsItsShareOfTheTrunk) {
    if (!std::getenv(kRankVariable)) GTEST_SKIP() << "runs as a rank of ParallelJob's mpirun jobs";
    parallel::Collective* const collective = &rank_job();
    const ModelFixture fixture = load_model_fixture("tiny-k3-mxfp4");
    const auto model = model::Model::load(fixture.model_path);
    const uint64_t whole_trunk = model->trunk_bytes();
    model->shard(collective->rank(), collective->size());
    const uint64_t working = runtime::estimate_working_bytes(model->hparams(), collective->size());
    const uint64_t expert = runtime::ExpertCache::largest_expert_bytes(model->file(), model->hparams());
    const uint64_t budget = model->trunk_bytes() + working + 3 * expert;
    ASSERT_LT(budget, whole_trunk + working + 2 * expert) << "a whole trunk would not fit this budget";

    runtime::EngineOptions alone_options;
    alone_options.n_threads = 1;
    runtime::EngineOptions rank_options = alone_options;
    rank_options.collective = collective;
    rank_options.residency.mem_budget = budget;
    const auto alone = runtime::Engine::load(fixture.model_path, alone_options);
    const auto rank = runtime::Engine::load(fixture.model_path, rank_options);
    ASSERT_TRUE(rank->expert_cache_counters()) << "the budget did not switch to streaming experts";
    for (const FixtureCase& c : fixture.cases)
        EXPECT_EQ(rank->new_session()->eval(c.prompt, true), alone->new_session()->eval(c.prompt, true)) << c.name;
}

// A rank whose share fits its budget, though the whole model would not, maps the file instead of
// streaming its experts (it reads its share in at load: util's PopulateMappedPages), and its logits
// are those of one process.
TEST(ParallelRank, RankWhoseShareFitsMapsTheFile) {
    if (!std::getenv(kRankVariable)) GTEST_SKIP() << "runs as a rank of ParallelJob's mpirun jobs";
    parallel::Collective* const collective = &rank_job();
    const ModelFixture fixture = load_model_fixture("tiny-k3-mxfp4");
    const auto model = model::Model::load(fixture.model_path);
    model->shard(collective->rank(), collective->size());
    uint64_t own_experts = 0;
    for (const model::LayerWeights& layer : model->weights().layers) {
        if (!layer.moe) continue;
        for (const kernels::MatrixView* m : {&layer.moe->gate_exps, &layer.moe->up_exps, &layer.moe->down_exps}) {
            const uint64_t expert_bytes = uint64_t(m->rows / model->hparams().n_expert) * m->row_stride;
            own_experts += expert_bytes * uint64_t(std::count(layer.moe->expert_rank.begin(),
                                                              layer.moe->expert_rank.end(), collective->rank()));
        }
    }
    const uint64_t share = model->trunk_bytes() + own_experts;
    const uint64_t working = runtime::estimate_working_bytes(model->hparams(), collective->size());
    const uint64_t file_size = std::filesystem::file_size(fixture.model_path);
    ASSERT_LT(share, file_size);
    const uint64_t budget = share + working + (file_size - share) / 4;  // the whole model would not fit

    runtime::EngineOptions rank_options;
    rank_options.n_threads = 1;
    rank_options.collective = collective;
    rank_options.residency.mem_budget = budget;
    const auto rank = runtime::Engine::load(fixture.model_path, rank_options);
    EXPECT_FALSE(rank->expert_cache_counters()) << "the rank streams experts although its share fits";

    runtime::EngineOptions alone_options;
    alone_options.n_threads = 1;
    const auto alone = runtime::Engine::load(fixture.model_path, alone_options);
    for (const FixtureCase& c : fixture.cases)
        EXPECT_EQ(rank->new_session()->eval(c.prompt, true), alone->new_session()->eval(c.prompt, true)) << c.name;
}

// Measured loads put the heaviest experts first, each on the least-loaded rank with room; worked
// out by hand: 8 then 7 (rank 1), 6 (rank 1, 7 < 8), 5 (rank 0), 4 (tie at 13: rank 0),
// 3 and 2 (rank 1, now full), 1 (rank 0): 18 each, where id ranges would give 26 and 10.
TEST(ExpertAssignment, MeasuredLoadsBalanceTheRanks) {
    const double loads[] = {8, 7, 6, 5, 4, 3, 2, 1};
    EXPECT_EQ(model::assign_experts(8, 2, loads), (std::vector<int32_t>{0, 1, 1, 0, 0, 1, 1, 0}));
    // No measurement (or none of a layer's experts ever chosen): id ranges.
    EXPECT_EQ(model::assign_experts(8, 2), (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
    const double unused[8] = {};
    EXPECT_EQ(model::assign_experts(5, 2, std::span(unused, 5)), (std::vector<int32_t>{0, 0, 1, 1, 1}));
    // Every rank holds at most ceil(X / N) experts, however skewed: one heavy expert and 3 ranks.
    const double skewed[] = {100, 1, 1, 1, 1, 1, 1};
    const std::vector<int32_t> ranks = model::assign_experts(7, 3, skewed);
    for (int32_t r = 0; r < 3; ++r) EXPECT_LE(std::count(ranks.begin(), ranks.end(), r), 3) << "rank " << r;
    EXPECT_EQ(std::count(ranks.begin(), ranks.end(), ranks[0]), 1);  // the heavy one alone on its rank
}

#ifdef K3_MPIEXEC
// A job that hangs fails its test after --timeout instead of stalling the suite. In a sanitized
// build the ranks keep every AddressSanitizer check but leak detection: Open MPI does not free
// what MPI_Init allocates, and the components it dlopens are unloaded before LeakSanitizer runs,
// so those reports name no module a suppression could match (the single-process tests keep it).
const std::vector<std::string> kMpirun = {"--oversubscribe", "--allow-run-as-root", "--timeout", "120",
                                          "-x", "ASAN_OPTIONS=detect_leaks=0"};

std::vector<std::string> mpirun_args(std::vector<std::string> args) {
    args.insert(args.begin(), kMpirun.begin(), kMpirun.end());
    return args;
}

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

void expect_ranks_pass(int n_ranks) {
    const CommandResult r =
        run_program(K3_MPIEXEC, mpirun_args({"-np", std::to_string(n_ranks), "-x", std::string(kRankVariable) + "=1",
                                             K3_TEST_BINARY, "--gtest_filter=ParallelRank.*", "--gtest_color=no"}));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(count(r.out, "[  PASSED  ] 5 tests"), size_t(n_ranks)) << r.out;  // every rank ran them, none skipped
}

TEST(ParallelJob, TwoRanksComputeWhatOneProcessComputes) { expect_ranks_pass(2); }
TEST(ParallelJob, FourRanksComputeWhatOneProcessComputes) { expect_ranks_pass(4); }

std::string fixture_tokens(const ModelFixture& fixture, size_t case_index) {
    std::string text;
    for (int32_t t : fixture.cases[case_index].prompt) {
        if (!text.empty()) text += ',';
        text += std::to_string(t);
    }
    return text;
}

std::vector<float> read_floats(const std::string& path) {
    const std::vector<uint8_t> bytes = read_bytes(path);
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
    return values;
}

struct EvalRuns {
    CommandResult alone, job;
};

// `k3 eval` of the fixture's second case, token by token with 8 greedy steps: in one process
// with `alone_options`, and on two ranks (--parallel-mode tp) with `job_options`.
EvalRuns eval_alone_and_on_two_ranks(const ModelFixture& fixture, const std::vector<std::string>& alone_options,
                                     const std::vector<std::string>& job_options) {
    const std::vector<std::string> eval = {"eval", "-m", fixture.model_path, "--tokens", fixture_tokens(fixture, 1),
                                           "--sequential", "--greedy", "8", "-t", "1"};
    std::vector<std::string> alone_args = eval, job_args = {"-np", "2", K3_BINARY};
    alone_args.insert(alone_args.end(), alone_options.begin(), alone_options.end());
    job_args.insert(job_args.end(), eval.begin(), eval.end());
    job_args.insert(job_args.end(), job_options.begin(), job_options.end());
    job_args.insert(job_args.end(), {"--parallel-mode", "tp"});
    return {run_k3(alone_args), run_program(K3_MPIEXEC, mpirun_args(job_args))};
}

// The command line: `k3 eval --parallel-mode tp` token by token, logits file and greedy ids.
TEST(ParallelJob, EvalOnTwoRanksPrintsWhatOneProcessPrints) {
    const ModelFixture fixture = load_model_fixture("tiny-k3-mxfp4");
    ScratchDir dir;
    const auto [alone, job] =
        eval_alone_and_on_two_ranks(fixture, {"--logits-out", dir.file("alone.f32")}, {"--logits-out", dir.file("job.f32")});
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    ASSERT_EQ(job.exit_code, 0) << job.err;
    EXPECT_EQ(job.out, alone.out);  // the greedy ids, printed once (by rank 0)
    const std::vector<float> expected = read_floats(dir.file("alone.f32")), got = read_floats(dir.file("job.f32"));
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_LE(max_abs_diff(got.data(), expected.data(), int64_t(got.size())), kTolerance);
}

// `k3 run ... --json` alone and on two ranks: the answers, less their timings.
struct RunAnswers {
    nlohmann::json alone, job;
};
RunAnswers run_alone_and_on_two_ranks(const std::vector<std::string>& run) {
    std::vector<std::string> job_args = {"-np", "2", K3_BINARY};
    job_args.insert(job_args.end(), run.begin(), run.end());
    job_args.insert(job_args.end(), {"--parallel-mode", "tp"});
    const CommandResult alone = run_k3(run);
    const CommandResult job = run_program(K3_MPIEXEC, mpirun_args(job_args));
    EXPECT_EQ(alone.exit_code, 0) << alone.err;
    EXPECT_EQ(job.exit_code, 0) << job.err;
    if (alone.exit_code != 0 || job.exit_code != 0) return {};
    RunAnswers answers{nlohmann::json::parse(alone.out), nlohmann::json::parse(job.out)};
    answers.alone.erase("timings");
    answers.job.erase("timings");
    return answers;
}

// `k3 run` led by rank 0: the same tokens as one process.
// The budget under which `ranks` ranks (1: one process) of tiny-k3-mxfp4 each stream their
// experts through a cache of three.
uint64_t streaming_budget(const std::string& model_path, int ranks) {
    uint64_t budget = 0;
    for (int rank = 0; rank < ranks; ++rank) {
        const auto model = model::Model::load(model_path);
        if (ranks > 1) model->shard(rank, ranks);
        budget = std::max(budget, model->trunk_bytes() + runtime::estimate_working_bytes(model->hparams(), ranks) +
                                      3 * runtime::ExpertCache::largest_expert_bytes(model->file(), model->hparams()));
    }
    return budget;
}

// Every rank counts the routing of every expert, not only of its own, and rank 0 alone writes
// the statistics: two streaming ranks save the file one streaming process saves.
TEST(ParallelJob, ExpertStatsOfTwoStreamingRanksAreThoseOfOneProcess) {
    const ModelFixture fixture = load_model_fixture("tiny-k3-mxfp4");
    ScratchDir dir;
    const auto [alone, job] = eval_alone_and_on_two_ranks(
        fixture, {"--expert-stats", dir.file("alone.stats"), "--mem-budget", std::to_string(streaming_budget(fixture.model_path, 1))},
        {"--expert-stats", dir.file("job.stats"), "--mem-budget", std::to_string(streaming_budget(fixture.model_path, 2))});
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    ASSERT_EQ(job.exit_code, 0) << job.err;
    ASSERT_NE(alone.err.find("streaming experts"), std::string::npos) << alone.err;
    ASSERT_EQ(count(job.err, "streaming experts"), 2u) << job.err;
    EXPECT_EQ(job.out, alone.out);
    EXPECT_EQ(read_bytes(dir.file("job.stats")), read_bytes(dir.file("alone.stats")));
}

TEST(ParallelJob, RunOnTwoRanksSamplesWhatOneProcessSamples) {
    const RunAnswers answers = run_alone_and_on_two_ranks({"run", "-m", fixture("tiny-k3/model.gguf"), "-p",
                                                           "Hello there", "-n", "12", "--temp", "0.9", "--seed", "11",
                                                           "-t", "1", "-q", "--json"});
    ASSERT_EQ(answers.alone["tokens"].size(), 12u);
    EXPECT_EQ(answers.job, answers.alone);
}

// A stop string ends the answer where one process ends it.
TEST(ParallelJob, RunOnTwoRanksStopsWhereOneProcessStops) {
    std::vector<std::string> run = {"run", "-m", fixture("tiny-k3/model.gguf"), "--raw", "-p", "Hello there", "-n", "12",
                                    "--temp", "0.9", "--seed", "11", "-t", "1", "-q", "--json"};
    const CommandResult whole = run_k3(run);
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    const std::string text = nlohmann::json::parse(whole.out)["text"];
    // Two ASCII bytes from the middle on (the random model's text may hold any character).
    size_t at = text.size() / 2;
    while (at + 1 < text.size() && (uint8_t(text[at]) >= 0x80 || uint8_t(text[at + 1]) >= 0x80)) ++at;
    ASSERT_LT(at + 1, text.size()) << text;
    run.insert(run.end(), {"--stop", text.substr(at, 2)});
    const RunAnswers answers = run_alone_and_on_two_ranks(run);
    ASSERT_EQ(answers.alone["finish_reason"], "stop") << answers.alone.dump();
    EXPECT_EQ(answers.job, answers.alone);
}

// Two programs in one job (mpirun's "A : B"): rank 0 evaluates `first`, rank 1 `second`. Returns
// the result and checks it ended within `seconds`.
CommandResult run_two_rank_job(const std::string& first, const std::string& second,
                               const std::vector<std::string>& extra, double seconds) {
    std::vector<std::string> rank0 = {"-np", "1", K3_BINARY, "eval", "-m", first, "--tokens", "1,2,3",
                                      "--parallel-mode", "tp"};
    std::vector<std::string> rank1 = {":", "-np", "1", K3_BINARY, "eval", "-m", second, "--tokens", "1,2,3",
                                      "--parallel-mode", "tp"};
    rank0.insert(rank0.end(), extra.begin(), extra.end());
    rank0.insert(rank0.end(), rank1.begin(), rank1.end());
    const auto start = std::chrono::steady_clock::now();
    const CommandResult r = run_program(K3_MPIEXEC, mpirun_args(rank0));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), seconds);
    EXPECT_NE(r.exit_code, 0);
    return r;
}

TEST(ParallelJob, RankMissingTheModelEndsTheJobNamingIt) {
    ScratchDir dir;
    const CommandResult r = run_two_rank_job(fixture("tiny-k3/model.gguf"), dir.file("absent.gguf"), {}, 20);
    EXPECT_NE(r.err.find("rank 1: " + dir.file("absent.gguf") + ": cannot open"), std::string::npos) << r.err;
}

TEST(ParallelJob, RankWithAnotherModelEndsTheJobNamingIt) {
    const CommandResult r = run_two_rank_job(fixture("tiny-k3/model.gguf"), fixture("tiny-k3-mxfp4/model.gguf"), {}, 20);
    EXPECT_NE(r.err.find("rank 1 loaded a different model file than rank 0"), std::string::npos) << r.err;
}

// Rank 1 blocks opening a FIFO nobody writes: rank 0 gives up after --parallel-timeout.
TEST(ParallelJob, RankThatNeverReportsEndsTheJobAfterTheTimeout) {
    ScratchDir dir;
    const std::string fifo = dir.file("model.gguf");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    const CommandResult r = run_two_rank_job(fixture("tiny-k3/model.gguf"), fifo, {"--parallel-timeout", "1"}, 20);
    EXPECT_NE(r.err.find("rank 1 did not report within 1 s"), std::string::npos) << r.err;
}
#else
TEST(ParallelJob, NeedsMpi) {
    EXPECT_FALSE(parallel::mpi_available());
    GTEST_SKIP() << "k3 was built without MPI (install openmpi-bin libopenmpi-dev and reconfigure)";
}
#endif

}  // namespace
}  // namespace k3::testing
