// runtime::Scheduler on tiny-k3: batched greedy generation equals llama.cpp's reference (with
// prompts fed in chunks across steps), the queue is bounded, and cancelling frees the slot;
// requests resume from the prompt cache with several slots busy; slot files save and restore.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>

#include "runtime/engine.h"
#include "runtime/generation.h"
#include "runtime/scheduler.h"
#include "runtime/session_file.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::testing {
namespace {

using runtime::GenerationSummary;
using runtime::JobOutcome;

// Collects tokens; optionally holds the scheduler's delivery thread inside on_token until released.
class CollectingSink : public runtime::TokenSink {
public:
    explicit CollectingSink(bool hold = false) : hold_(hold) {}
    bool on_token(const runtime::SampledToken& token) override {
        std::unique_lock lock(mutex_);
        tokens_.push_back(token.id);
        entered_ = true;
        changed_.notify_all();
        changed_.wait(lock, [&] { return !hold_; });
        return true;
    }
    void on_finish(const GenerationSummary& summary) override { done_.set_value(summary); }
    void release() {
        std::lock_guard lock(mutex_);
        hold_ = false;
        changed_.notify_all();
    }
    void wait_entered() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return entered_; });
    }
    GenerationSummary wait() { return done_future_.get(); }
    bool wait_for(std::chrono::seconds limit) { return done_future_.wait_for(limit) == std::future_status::ready; }
    std::vector<int32_t> tokens() {
        std::lock_guard lock(mutex_);
        return tokens_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool hold_, entered_ = false;
    std::vector<int32_t> tokens_;
    std::promise<GenerationSummary> done_;
    std::shared_future<GenerationSummary> done_future_ = done_.get_future().share();
};

runtime::GenerationRequest greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
    runtime::GenerationRequest request;
    request.prompt = std::move(prompt);
    request.params.sampling.temperature = 0.0f;
    request.params.max_tokens = max_tokens;
    return request;
}

class SchedulerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        runtime::EngineOptions options;
        options.n_threads = 2;
        engine_ = runtime::Engine::load(fixture("tiny-k3/model.gguf"), options).release();
    }
    static void TearDownTestSuite() { delete engine_; }
    static runtime::Engine* engine_;
};
runtime::Engine* SchedulerTest::engine_ = nullptr;

TEST_F(SchedulerTest, BatchedGreedyWithChunkedPrefillEqualsReference) {
    const nlohmann::json cases = nlohmann::json::parse(read_text(fixture("tiny-k3/cases.json")))["cases"];
    // Chunks of 7 put prompts of different lengths in different phases at every step.
    runtime::Scheduler scheduler(*engine_, {.n_slots = 4, .ctx_size = 512, .queue_capacity = 8, .prefill_chunk = 7});
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (const auto& c : cases) {
        sinks.push_back(std::make_shared<CollectingSink>());
        ASSERT_NE(scheduler.submit(greedy(c["prompt"].get<std::vector<int32_t>>(), 32), sinks.back()), nullptr);
    }
    for (size_t i = 0; i < cases.size(); ++i) {
        const GenerationSummary summary = sinks[i]->wait();
        EXPECT_EQ(summary.outcome, JobOutcome::finished);
        EXPECT_EQ(summary.finish, runtime::FinishReason::length);
        EXPECT_EQ(sinks[i]->tokens(), cases[i]["generated"].get<std::vector<int32_t>>()) << cases[i]["name"];
    }
}

TEST_F(SchedulerTest, QueueIsBoundedAndCancelFreesTheSlot) {
    // The running request is long enough (seconds) to be cancelled while it runs.
    runtime::Scheduler scheduler(*engine_, {.n_slots = 1, .ctx_size = 4096, .queue_capacity = 1});
    auto running = std::make_shared<CollectingSink>(/*hold=*/true);
    auto queued = std::make_shared<CollectingSink>();
    auto refused = std::make_shared<CollectingSink>();
    auto job = scheduler.submit(greedy({1, 2, 3}, 4000), running);
    ASSERT_NE(job, nullptr);
    running->wait_entered();  // it holds the only slot
    ASSERT_NE(scheduler.submit(greedy({4, 5}, 3), queued), nullptr);
    EXPECT_EQ(scheduler.submit(greedy({6}, 3), refused), nullptr) << "the queue holds one request";
    EXPECT_EQ(scheduler.stats().queued, 1u);
    job->cancel();
    running->release();
    const GenerationSummary cancelled = running->wait();
    EXPECT_EQ(cancelled.outcome, JobOutcome::cancelled);
    EXPECT_LT(cancelled.n_generated, 4000);
    const GenerationSummary next = queued->wait();
    EXPECT_EQ(next.outcome, JobOutcome::finished);
    EXPECT_EQ(queued->tokens().size(), 3u);
}

TEST_F(SchedulerTest, ASinkThatWaitsDoesNotHoldTheModelBack) {
    const nlohmann::json c = nlohmann::json::parse(read_text(fixture("tiny-k3/cases.json")))["cases"][0];
    runtime::Scheduler scheduler(*engine_, {.n_slots = 1, .ctx_size = 512});
    auto held = std::make_shared<CollectingSink>(/*hold=*/true);
    ASSERT_NE(scheduler.submit(greedy(c["prompt"].get<std::vector<int32_t>>(), 32), held), nullptr);
    held->wait_entered();  // its first token is being delivered, and stays there
    // Meanwhile the model generates the rest of the answer.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (scheduler.stats().finished == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(scheduler.stats().finished, 1u);
    EXPECT_EQ(held->tokens().size(), 1u);
    held->release();
    EXPECT_EQ(held->wait().n_generated, 32);
    EXPECT_EQ(held->tokens(), c["generated"].get<std::vector<int32_t>>());
}

TEST_F(SchedulerTest, RefusesRequestsThatCannotFit) {
    runtime::Scheduler scheduler(*engine_, {.n_slots = 1, .ctx_size = 16});
    auto sink = std::make_shared<CollectingSink>();
    EXPECT_THROW(scheduler.submit(greedy({}, 1), sink), Error);
    EXPECT_THROW(scheduler.submit(greedy(std::vector<int32_t>(16, 1), 1), sink), Error);
    EXPECT_THROW(scheduler.submit(greedy({1, 2}, 15), sink), Error);
    EXPECT_THROW(scheduler.submit(greedy({1, 5000}, 1), sink), Error);
    ASSERT_NE(scheduler.submit(greedy({1, 2}, 14), sink), nullptr);
    EXPECT_EQ(sink->wait().n_generated + 2, 16);
}

// A long shared prefix (the fixture's longest sequence) followed by a different question each.
std::vector<int32_t> conversation(const nlohmann::json& cases, size_t question) {
    std::vector<int32_t> prompt = cases[2]["prompt"].get<std::vector<int32_t>>();
    const std::vector<int32_t> tail = cases[question]["prompt"].get<std::vector<int32_t>>();
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    return prompt;
}

// The greedy tokens after `prompt` computed cold, by a scheduler of its own that caches nothing.
std::vector<int32_t> greedy_cold(const runtime::Engine& engine, std::vector<int32_t> prompt, int64_t max_tokens) {
    runtime::Scheduler cold(engine, {.ctx_size = 512});
    runtime::GenerationRequest alone = greedy(std::move(prompt), max_tokens);
    alone.cache_prompt = false;
    return runtime::generate(cold, alone, [](const runtime::SampledToken&) { return true; }).tokens;
}

TEST_F(SchedulerTest, RequestsResumeFromTheCacheWithSeveralSlotsBusy) {
    const nlohmann::json cases = nlohmann::json::parse(read_text(fixture("tiny-k3/cases.json")))["cases"];
    const int64_t system = int64_t(cases[2]["prompt"].size());
    runtime::Scheduler scheduler(*engine_, {.n_slots = 3, .ctx_size = 512, .queue_capacity = 8, .prefill_chunk = 64});
    auto first = std::make_shared<CollectingSink>();
    runtime::GenerationRequest request = greedy(conversation(cases, 2), 8);
    request.boundaries = {system};
    ASSERT_NE(scheduler.submit(request, first), nullptr);
    EXPECT_EQ(first->wait().n_cached, 0);

    // Questions that share nothing with each other beyond the system prompt (case 1 is the start
    // of case 2, so two of them sharing more would resume from each other's checkpoints, or not,
    // depending on which slot started first).
    const size_t questions[] = {0, 1, 3};
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (size_t i : questions) {
        sinks.push_back(std::make_shared<CollectingSink>());
        runtime::GenerationRequest next = greedy(conversation(cases, i), 8);
        next.boundaries = {system};
        ASSERT_NE(scheduler.submit(next, sinks.back()), nullptr);
    }
    std::vector<int> used_slots;
    for (size_t k = 0; k < 3; ++k) {
        const GenerationSummary summary = sinks[k]->wait();
        EXPECT_TRUE(summary.slot >= 0 && summary.slot < 3) << "the slot that ran it: " << summary.slot;
        used_slots.push_back(summary.slot);
        EXPECT_EQ(summary.n_cached, system / 16 * 16) << "the system prompt's checkpoint";
        // The same greedy tokens as the prompt computed cold.
        EXPECT_EQ(sinks[k]->tokens(), greedy_cold(*engine_, conversation(cases, questions[k]), 8))
            << "question " << questions[k];
    }
    EXPECT_EQ(scheduler.stats().cached_prompt_tokens, uint64_t(3 * (system / 16 * 16)));
    // Every slot a question ran on keeps a conversation's tokens (which slots they were depends
    // on timing: a question that ends before the next is submitted leaves its slot to it).
    for (const runtime::SlotInfo& slot : scheduler.slots()) {
        EXPECT_FALSE(slot.processing);
        if (std::find(used_slots.begin(), used_slots.end(), slot.id) != used_slots.end()) {
            EXPECT_GT(slot.n_tokens, system) << "slot " << slot.id << " keeps its tokens";
        }
    }

    // cache_prompt false: computed from nothing.
    auto uncached = std::make_shared<CollectingSink>();
    runtime::GenerationRequest plain = greedy(conversation(cases, 0), 2);
    plain.cache_prompt = false;
    ASSERT_NE(scheduler.submit(plain, uncached), nullptr);
    EXPECT_EQ(uncached->wait().n_cached, 0);
}

TEST_F(SchedulerTest, CheckpointsInsideAPromptPassAreCapturedAndResumeAsCold) {
    const nlohmann::json cases = nlohmann::json::parse(read_text(fixture("tiny-k3/cases.json")))["cases"];
    const int64_t system = int64_t(cases[2]["prompt"].size());
    // One pass per prompt (the default prefill chunk): the checkpoints at the message boundary
    // and at the branch from a cached prompt fall inside it.
    runtime::Scheduler scheduler(*engine_, {.n_slots = 1, .ctx_size = 512});
    auto run = [&](size_t question, std::vector<int64_t> boundaries) {
        auto sink = std::make_shared<CollectingSink>();
        runtime::GenerationRequest request = greedy(conversation(cases, question), 4);
        request.boundaries = std::move(boundaries);
        EXPECT_NE(scheduler.submit(request, sink), nullptr);
        const GenerationSummary summary = sink->wait();
        EXPECT_EQ(sink->tokens(), greedy_cold(*engine_, conversation(cases, question), 4)) << "question " << question;
        return summary.n_cached;
    };
    EXPECT_EQ(run(1, {}), 0);
    EXPECT_EQ(run(3, {}), 0) << "parts from the first after the system prompt: a checkpoint at the branch";
    EXPECT_EQ(run(0, {}), system / 16 * 16);
    EXPECT_EQ(run(0, {system + 2}), system / 16 * 16) << "an exact repeat resumes near its end";
}

TEST_F(SchedulerTest, SlotFilesSaveRestoreAndErase) {
    ScratchDir dir;
    runtime::Scheduler scheduler(*engine_, {.n_slots = 2, .ctx_size = 256});
    auto sink = std::make_shared<CollectingSink>();
    ASSERT_NE(scheduler.submit(greedy({1, 2, 3, 4, 5}, 4), sink), nullptr);
    sink->wait();
    const int64_t n = scheduler.slots()[0].n_tokens;
    ASSERT_GT(n, 5);
    const runtime::SlotFileResult saved = scheduler.save_slot(0, dir.file("slot0.bin"));
    EXPECT_EQ(saved.n_tokens, n);
    EXPECT_GT(saved.n_bytes, 0u);
    EXPECT_EQ(scheduler.erase_slot(0), n);
    EXPECT_EQ(scheduler.slots()[0].n_tokens, 0);
    EXPECT_EQ(scheduler.restore_slot(1, dir.file("slot0.bin")).n_tokens, n);
    EXPECT_EQ(scheduler.slots()[1].n_tokens, n);
    EXPECT_THROW(scheduler.save_slot(2, dir.file("x")), Error);
    EXPECT_THROW(scheduler.erase_slot(-1), Error);
    write_bytes(dir.file("junk.bin"), "junk", 4);
    EXPECT_THROW(scheduler.restore_slot(0, dir.file("junk.bin")), Error);
    EXPECT_THROW(scheduler.restore_slot(0, dir.file("missing.bin")), Error);
    EXPECT_EQ(scheduler.slots()[0].n_tokens, 0) << "a failed restore leaves the slot as it was";
}

// A slot's file is written off the slot: a save whose write is held (its temporary file is a
// FIFO nobody reads yet) does not keep a request from running on that slot, and answers only
// once the write has ended (here in failure: a FIFO cannot be fsync'ed into a complete file).
TEST_F(SchedulerTest, ASlotServesRequestsWhileItsFileIsWritten) {
    ScratchDir dir;
    runtime::Scheduler scheduler(*engine_, {.n_slots = 1, .ctx_size = 1024});
    std::vector<int32_t> prompt(600);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(1 + i % 97);
    auto first = std::make_shared<CollectingSink>();
    ASSERT_NE(scheduler.submit(greedy(prompt, 2), first), nullptr);
    first->wait();
    // More than a pipe holds, so that the writer is stopped inside the file, not before it.
    const runtime::SlotFileResult plain = scheduler.save_slot(0, dir.file("plain.bin"));
    ASSERT_GT(plain.n_bytes, uint64_t(256) << 10) << "the state must outgrow the pipe's buffer";

    const std::string path = dir.file("held.bin");
    const std::string temp = path + ".tmp" + std::to_string(::getpid());  // write_session_file's name
    ASSERT_EQ(::mkfifo(temp.c_str(), 0600), 0);
    const int fifo = ::open(temp.c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(fifo, 0);
    std::future<runtime::SlotFileResult> saving =
        std::async(std::launch::async, [&] { return scheduler.save_slot(0, path); });
    pollfd ready{fifo, POLLIN, 0};
    ASSERT_EQ(::poll(&ready, 1, 60'000), 1) << "the write never began";

    auto second = std::make_shared<CollectingSink>();
    ASSERT_NE(scheduler.submit(greedy({5, 6, 7}, 2), second), nullptr);
    const bool answered_while_writing =
        second->wait_for(std::chrono::seconds(60)) && saving.wait_for(std::chrono::seconds(0)) != std::future_status::ready;

    ::fcntl(fifo, F_SETFL, 0);  // let the write end: read the FIFO to its end
    char buffer[1 << 16];
    while (::read(fifo, buffer, sizeof buffer) > 0) {}
    ::close(fifo);
    EXPECT_TRUE(answered_while_writing);
    EXPECT_THROW(saving.get(), Error);
    EXPECT_EQ(second->wait().n_generated, 2);
}

}  // namespace
}  // namespace k3::testing
