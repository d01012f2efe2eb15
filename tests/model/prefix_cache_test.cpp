// The prompt cache (issue #13) on tiny-k3: a request answered from the cache gives the logits of
// the same request computed cold (max |Δlogit| <= 1e-4) and the same greedy tokens, for an exact
// repeat, a conversation extended by a turn, an edited last message, two conversations sharing
// a system prompt, after eviction under a small budget and after a restart from the disk tier;
// a corrupt or foreign file in the folder is ignored. (Scheduler slots: tests/runtime.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <mutex>

#include "gguf/gguf_file.h"
#include "model/cached_session.h"
#include "model/fixture_cases.h"
#include "model/hparams.h"
#include "model/tiny_k3_engine_suite.h"
#include "runtime/engine.h"
#include "runtime/generation.h"
#include "runtime/memory_budget.h"
#include "runtime/prefix_cache.h"
#include "runtime/prefix_cache_disk.h"
#include "runtime/session.h"
#include "runtime/session_file.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::runtime {
namespace {

using testing::CachedSession;
using testing::ModelFixture;

constexpr float kCacheTolerance = 1e-4f;  // issue #13

// Greedy tokens after `prompt` prefilled (again) through `session`, the last one not fed: an
// oracle independent of the scheduler.
std::vector<int32_t> greedy_after(CachedSession& session, const std::vector<int32_t>& prompt, size_t n) {
    std::vector<float> logits = session.prefill(prompt);
    std::vector<int32_t> tokens;
    for (;;) {
        tokens.push_back(argmax(logits));
        if (tokens.size() == n) return tokens;
        logits = session.feed(tokens.back());
    }
}

std::vector<int32_t> concat(std::initializer_list<std::span<const int32_t>> parts) {
    std::vector<int32_t> all;
    for (std::span<const int32_t> part : parts) all.insert(all.end(), part.begin(), part.end());
    return all;
}

class PrefixCacheTest : public testing::TinyK3EngineSuite<PrefixCacheTest> {
protected:

    // Stand-ins for chat parts, cut from the fixture's token sequences: a 130-token system
    // prompt and user messages (the fixture's short/medium/special cases).
    static std::span<const int32_t> system() { return fixture_->cases[2].tokens; }
    static std::span<const int32_t> message(size_t i) { return fixture_->cases[i == 2 ? 3 : i].prompt; }

    // Prefills `prompt` through `cached` and checks it against a cold computation; returns the
    // tokens reused. Records the largest |Δlogit| seen.
    int64_t expect_as_cold(CachedSession& cached, const std::vector<int32_t>& prompt,
                           std::span<const int64_t> boundaries = {}) {
        int64_t reused = -1;
        const std::vector<float> logits = cached.prefill(prompt, &reused, boundaries);
        const std::vector<float> cold = engine_->new_session()->eval(prompt);
        const float diff = testing::max_abs_diff(logits.data(), cold.data(), fixture_->n_vocab);
        EXPECT_LE(diff, kCacheTolerance) << prompt.size() << " tokens, " << reused << " reused";
        max_diff_ = std::max(max_diff_, diff);
        // Greedy continuation from the cached state equals the cold one.
        CachedSession fresh(*engine_);
        EXPECT_EQ(greedy_after(cached, prompt, 8), greedy_after(fresh, prompt, 8));
        return reused;
    }
    void TearDown() override { std::printf("[ measured ] max |dlogit| cached vs cold: %.3g\n", double(max_diff_)); }

    float max_diff_ = 0.0f;
};


TEST_F(PrefixCacheTest, CheckpointPositionsAreChunkAlignedAndInsideThePrompt) {
    PrefixCache cache(*engine_, {.checkpoint_every = 32});
    const std::vector<int64_t> boundaries = {5, 40, 70};
    EXPECT_EQ(cache.checkpoint_positions(0, 100, boundaries), (std::vector<int64_t>{32, 64, 96}));
    EXPECT_EQ(cache.checkpoint_positions(40, 75, boundaries), (std::vector<int64_t>{64}));
    EXPECT_EQ(cache.checkpoint_positions(0, 10, {}), std::vector<int64_t>{});
    EXPECT_THROW(PrefixCache(*engine_, {.checkpoint_every = 20}), Error);
    EXPECT_THROW(PrefixCache(*engine_, {.checkpoint_every = 0}), Error);
}

TEST_F(PrefixCacheTest, ExactRepeatExtendedTurnAndEditedMessageMatchCold) {
    PrefixCache cache(*engine_, {});
    CachedSession session(*engine_, &cache);
    const std::vector<int32_t> turn1 = concat({system(), message(0)});
    const std::vector<int64_t> boundaries = {int64_t(system().size())};
    EXPECT_EQ(expect_as_cold(session, turn1, boundaries), 0);

    // The same request again, from another session: resumes at the last chunk boundary before its end.
    CachedSession other(*engine_, &cache);
    EXPECT_EQ(expect_as_cold(other, turn1, boundaries), int64_t(turn1.size() - 1) / 16 * 16);

    // Extended by the answer and a new message: from the first turn's last checkpoint.
    const std::vector<int32_t> answer(session.consumed().begin() + std::ptrdiff_t(turn1.size()), session.consumed().end());
    ASSERT_FALSE(answer.empty());
    const std::vector<int32_t> turn2 = concat({turn1, answer, message(1)});
    EXPECT_EQ(expect_as_cold(session, turn2, boundaries), int64_t(turn1.size() - 1) / 16 * 16);

    // The last user message edited: resumes from the checkpoint at the system prompt's end.
    std::vector<int32_t> edited = turn1;
    edited[system().size() + 1] ^= 1;
    CachedSession third(*engine_, &cache);
    EXPECT_EQ(expect_as_cold(third, edited, boundaries), int64_t(system().size()) / 16 * 16);
}

TEST_F(PrefixCacheTest, ConversationsSharingASystemPromptReuseIt) {
    PrefixCache cache(*engine_, {});
    const std::vector<int64_t> boundaries = {int64_t(system().size())};
    for (size_t i = 0; i < 3; ++i) {
        CachedSession session(*engine_, &cache);
        const int64_t reused = expect_as_cold(session, concat({system(), message(i)}), boundaries);
        EXPECT_EQ(reused, i == 0 ? 0 : int64_t(system().size()) / 16 * 16) << "conversation " << i;
    }
    EXPECT_GE(cache.stats().hits, 2u);
}

TEST_F(PrefixCacheTest, EvictionKeepsTheBudgetAndResultsExact) {
    // Room for about three states of the system prompt's length.
    CachedSession probe(*engine_);
    probe.prefill(system());
    const uint64_t budget = 3 * probe.session().snapshot()->sequence.bytes();
    PrefixCache cache(*engine_, {.ram_bytes = budget, .checkpoint_every = 32});
    for (size_t round = 0; round < 2; ++round)
        for (size_t i = 0; i < 3; ++i) {
            CachedSession session(*engine_, &cache);
            const int64_t reused = expect_as_cold(session, concat({system(), message(i), message((i + 1) % 3)}));
            // A hit keeps the shared system prompt's checkpoints ahead of the conversations' own.
            if (round + i > 0) {
                EXPECT_GE(reused, 64) << "round " << round << " conversation " << i;
            }
            EXPECT_LE(cache.stats().bytes, budget);
        }
    EXPECT_GT(cache.stats().evictions, 0u);
}

TEST_F(PrefixCacheTest, DiskTierSurvivesARestartAndIgnoresCorruptOrForeignFiles) {
    testing::ScratchDir dir;
    const std::vector<int32_t> prompt = concat({system(), message(1)});
    const std::vector<int32_t> longer = concat({prompt, message(0)});
    const int64_t checkpoint = int64_t(prompt.size() - 1) / 16 * 16;  // the last before the prompt's end
    {
        PrefixCache cache(*engine_, {.dir = dir.path()});
        CachedSession session(*engine_, &cache);
        expect_as_cold(session, prompt);
        cache.flush_disk();
        EXPECT_GT(cache.stats().disk_entries, 0u);
    }
    std::string checkpoint_file;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
        if (read_session_file_tokens(entry.path().string(), engine_->identity()).size() == size_t(checkpoint))
            checkpoint_file = entry.path().string();
    ASSERT_FALSE(checkpoint_file.empty());
    {
        PrefixCache restarted(*engine_, {.dir = dir.path()});
        EXPECT_EQ(restarted.stats().entries, 0u);
        CachedSession session(*engine_, &restarted);
        EXPECT_EQ(expect_as_cold(session, longer), checkpoint);
    }
    // Damage: the checkpoint's file with a byte flipped, a truncated copy, another model's state, a stranger.
    std::vector<uint8_t> bytes = testing::read_bytes(checkpoint_file);
    SessionState foreign = read_session_file(checkpoint_file, *engine_, engine_->identity());
    foreign.tokens.back() ^= 1;  // another prefix, so that it would match if it were trusted
    write_session_file(dir.file("foreign.k3state"), foreign, engine_->identity() + 1);
    testing::write_bytes(dir.file("truncated.k3state"), bytes.data(), bytes.size() / 2);
    bytes[bytes.size() / 2] ^= 0xff;
    testing::write_bytes(checkpoint_file, bytes.data(), bytes.size());
    testing::write_bytes(dir.file("stranger.k3state"), "hello", 5);
    EXPECT_THROW(read_session_file(checkpoint_file, *engine_, engine_->identity()), Error);
    EXPECT_THROW(read_session_file(dir.file("truncated.k3state"), *engine_, engine_->identity()), Error);
    EXPECT_THROW(read_session_file(dir.file("foreign.k3state"), *engine_, engine_->identity()), Error);

    ::testing::internal::CaptureStderr();
    PrefixCache restarted(*engine_, {.dir = dir.path()});
    CachedSession session(*engine_, &restarted);
    const int64_t reused = expect_as_cold(session, longer);
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(reused, 0);  // nothing trustworthy matches: computed cold
    const auto warned = [&](const std::string& name) {
        return warnings.find("warning: prompt cache: ignoring " + name) != std::string::npos;
    };
    // Named in a warning when the folder is read: another model's and the stranger. The truncated
    // copy and the flipped one hold the same prefix (their headers are whole), so the tree keeps
    // one of them, refused with a warning when loaded.
    EXPECT_TRUE(warned(dir.file("foreign.k3state"))) << warnings;
    EXPECT_TRUE(warned(dir.file("stranger.k3state"))) << warnings;
    EXPECT_TRUE(warned(dir.file("truncated.k3state")) || warned(checkpoint_file)) << warnings;
}

TEST_F(PrefixCacheTest, TheDefaultMemoryIsCountedIntoTheBudget) {
    constexpr uint64_t GiB = uint64_t(1) << 30, MiB = uint64_t(1) << 20;
    const uint64_t model_and_working =
        std::filesystem::file_size(fixture_->model_path) +
        estimate_working_bytes(model::HParams::from_gguf(*gguf::GgufFile::open(fixture_->model_path)));
    auto cache_bytes = [&](uint64_t budget, std::optional<uint64_t> given) {
        EngineOptions options;
        options.n_threads = 1;
        options.residency.mem_budget = budget;
        options.residency.prompt_cache_bytes = given;
        const std::unique_ptr<Engine> engine = Engine::load(fixture_->model_path, options);
        EXPECT_FALSE(engine->expert_cache_counters()) << "the model fits, with the cache";
        EXPECT_EQ(PrefixCache(*engine, {}).ram_bytes(), engine->prompt_cache_bytes());
        return engine->prompt_cache_bytes();
    };
    EXPECT_EQ(cache_bytes(0, {}), 8 * GiB) << "no budget: llama-server's default";
    EXPECT_EQ(cache_bytes(model_and_working + 100 * MiB, {}), 100 * MiB) << "what the model leaves";
    EXPECT_EQ(cache_bytes(model_and_working + 64 * GiB, {}), 8 * GiB) << "at most 8 GiB";
    EXPECT_EQ(cache_bytes(model_and_working + 100 * MiB, 50 * MiB), 50 * MiB) << "--cache-ram given";
}

TEST_F(PrefixCacheTest, StatesCapturedInsideAPassResumeAsCold) {
    const std::vector<int32_t> prompt = concat({system(), message(1)});
    std::unique_ptr<Session> session = engine_->new_session();
    SequenceInput input;
    input.session = session.get();
    input.tokens = prompt;
    input.capture_at = {16, 64, 128};
    engine_->decode(std::span(&input, 1));
    ASSERT_EQ(input.captured.size(), 3u);
    const std::vector<float> cold = engine_->new_session()->eval(prompt);
    for (size_t i = 0; i < 3; ++i) {
        const SessionSnapshot& captured = input.captured[i];
        const int64_t at = input.capture_at[i];
        ASSERT_EQ(captured->sequence.position, at);
        ASSERT_EQ(captured->tokens, std::vector<int32_t>(prompt.begin(), prompt.begin() + at));
        std::unique_ptr<Session> resumed = engine_->new_session();
        resumed->restore(captured);
        const std::vector<float> logits = resumed->eval(std::span(prompt).subspan(size_t(at)));
        const float diff = testing::max_abs_diff(logits.data(), cold.data(), fixture_->n_vocab);
        EXPECT_LE(diff, kCacheTolerance) << "resumed at " << at;
        max_diff_ = std::max(max_diff_, diff);
    }
    // The pass itself ends where an uncaptured one does.
    const std::vector<float> passed(input.logits.begin(), input.logits.begin() + fixture_->n_vocab);
    EXPECT_EQ(testing::max_abs_diff(passed.data(), cold.data(), fixture_->n_vocab), 0.0f);
    std::unique_ptr<Session> other = engine_->new_session();
    input.session = other.get();
    input.capture_at = {int64_t(prompt.size()) / 16 * 16 + 16};
    EXPECT_THROW(engine_->decode(std::span(&input, 1)), Error) << "a capture past the pass's end";
    input.capture_at = {24};
    EXPECT_THROW(engine_->decode(std::span(&input, 1)), Error) << "a capture off the KDA chunks";
}

// The disk tier on its own: states of the fixture's prompts, each file about the same size.
class PrefixCacheDiskTest : public PrefixCacheTest {
protected:
    static SessionSnapshot state_of(std::span<const int32_t> tokens) {
        std::unique_ptr<Session> session = engine_->new_session();
        session->eval(tokens);
        return session->snapshot();
    }
    static std::vector<SessionSnapshot> states(size_t n) {
        std::vector<SessionSnapshot> out;
        for (size_t i = 0; i < n; ++i) out.push_back(state_of(system().subspan(0, 64 + 16 * i)));
        return out;
    }
    static uint64_t file_bytes(const SessionSnapshot& state) {
        testing::ScratchDir dir;
        return write_session_file(dir.file("probe.k3state"), *state, engine_->identity());
    }
};

TEST_F(PrefixCacheDiskTest, WritesWaitForNoOneAndFinishBeforeShutdown) {
    testing::ScratchDir dir;
    const std::vector<SessionSnapshot> all = states(3);
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> written = 0;
    {
        // The listener runs on the writer thread: holding it there stalls the disk, not write().
        PrefixCacheDisk disk(dir.path(), uint64_t(1) << 30, uint64_t(1) << 30, engine_->identity(),
                             [&](std::span<const int32_t>, const std::string&, bool present) {
                                 if (present && written++ == 0) released.wait();
                             });
        disk.scan();
        const auto start = std::chrono::steady_clock::now();
        for (const SessionSnapshot& state : all) disk.write(state);
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.5)
            << "write() waited for the disk";
        // A state still queued loads from memory.
        EXPECT_EQ(disk.load(disk.path_for(all[2]->tokens), *engine_)->tokens, all[2]->tokens);
        release.set_value();
    }  // the destructor finishes the queue
    EXPECT_EQ(written.load(), 3);
    PrefixCacheDisk again(dir.path(), uint64_t(1) << 30, uint64_t(1) << 30, engine_->identity(),
                          [](std::span<const int32_t>, const std::string&, bool) {});
    EXPECT_EQ(again.scan().size(), 3u);
}

TEST_F(PrefixCacheDiskTest, TheBudgetDeletesTheLeastRecentlyUsedFiles) {
    testing::ScratchDir dir;
    const std::vector<SessionSnapshot> all = states(4);
    const uint64_t budget = file_bytes(all[2]) + file_bytes(all[3]);  // any two files fit, no three
    ASSERT_GT(file_bytes(all[0]) + file_bytes(all[1]), file_bytes(all[3]));
    std::vector<std::string> deleted;
    std::mutex mutex;
    auto listener = [&](std::span<const int32_t>, const std::string& path, bool present) {
        std::lock_guard lock(mutex);
        if (!present) deleted.push_back(path);
    };
    PrefixCacheDisk disk(dir.path(), budget, budget, engine_->identity(), listener);
    disk.scan();
    for (size_t i = 0; i < 3; ++i) {
        disk.write(all[i]);
        disk.flush();
    }
    EXPECT_EQ(deleted, std::vector<std::string>{disk.path_for(all[0]->tokens)});
    disk.load(disk.path_for(all[1]->tokens), *engine_);  // now 2 is the least recently used
    disk.write(all[3]);
    disk.flush();
    EXPECT_EQ(deleted.back(), disk.path_for(all[2]->tokens));
    EXPECT_EQ(disk.files(), 2u);
    EXPECT_LE(disk.bytes(), budget);
    EXPECT_FALSE(std::filesystem::exists(disk.path_for(all[0]->tokens)));
    EXPECT_FALSE(std::filesystem::exists(disk.path_for(all[2]->tokens)));

    // After a restart with a smaller budget the older of the two goes (their times say which).
    PrefixCacheDisk smaller(dir.path(), file_bytes(all[3]), budget, engine_->identity(), listener);
    const std::vector<PrefixCacheDisk::File> kept = smaller.scan();
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].tokens, all[3]->tokens);
}

TEST_F(PrefixCacheTest, APromptPartingFromACachedOneLeavesACheckpointAtTheBranch) {
    PrefixCache cache(*engine_, {});
    // No boundaries given; the first prompt's checkpoints all lie past the system prompt.
    CachedSession first(*engine_, &cache);
    ASSERT_GT(int64_t(system().size() + message(1).size() - 1) / 16 * 16, int64_t(system().size()));
    expect_as_cold(first, concat({system(), message(1)}));
    // Parts from the first after the system prompt: nothing to resume from, but it stores a
    // checkpoint at the branch, which the third resumes from.
    CachedSession second(*engine_, &cache);
    EXPECT_EQ(expect_as_cold(second, concat({system(), message(2)})), 0);
    CachedSession third(*engine_, &cache);
    EXPECT_EQ(expect_as_cold(third, concat({system(), message(0)})), int64_t(system().size()) / 16 * 16);
}

}  // namespace
}  // namespace k3::runtime
