// The one generation loop, for `k3 run`, `k3 chat` (one slot) and the HTTP server alike.
// Continuous batching at the token level: up to n_slots sequences advance together in one
// Engine::decode per step; new requests join between steps; a finished or cancelled sequence
// frees its slot at once; requests beyond capacity wait in a bounded queue.
//
//   Scheduler scheduler(engine, {.n_slots = 4, .ctx_size = 4096, .queue_capacity = 64});
//   auto job = scheduler.submit(request, sink);   // nullptr: the queue is full
//   job->cancel();                                // from any thread
//
// Inference runs on the scheduler's own thread, never on the caller's (e.g. an HTTP I/O thread).
// Everything a sink is told arrives, in order, on a second thread, its delivery thread, so that
// detokenizing and formatting answers never delay a step of the model: a slow sink only delays
// the other sinks' deliveries.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/generation.h"  // GenerationParams, FinishReason
#include "runtime/prefix_cache.h"
#include "runtime/session_file_writer.h"

namespace k3::runtime {

class Engine;
class Session;

struct SchedulerOptions {
    int n_slots = 1;              // sequences decoded together
    int64_t ctx_size = 0;         // tokens per sequence (prompt + generated); 0: the model's
    size_t queue_capacity = 64;   // requests waiting for a slot
    int64_t prefill_chunk = 512;  // prompt tokens fed per step, so long prompts do not stall others
    PrefixCacheOptions cache = {};  // the prompt cache every slot resumes from
};

struct GenerationRequest {
    std::vector<int32_t> prompt;  // at least one token
    GenerationParams params;      // max_tokens < 0: until the context is full
    bool cache_prompt = true;     // resume from the prompt cache and store checkpoints in it
    std::vector<int64_t> boundaries;  // token positions where a chat's messages end (checkpoints)
};

enum class JobOutcome {
    finished,   // see GenerationSummary::finish
    cancelled,  // GenerationJob::cancel() or scheduler shutdown
    error,      // the engine threw; see GenerationSummary::error
};

struct GenerationSummary {
    JobOutcome outcome = JobOutcome::finished;
    FinishReason finish = FinishReason::length;  // when finished
    std::string error;
    int slot = -1;                 // the slot that ran it (-1: none, e.g. refused while queued)
    int64_t n_prompt = 0;
    int64_t n_cached = 0;          // prompt tokens resumed from the prompt cache
    int64_t n_generated = 0;       // tokens delivered to on_token
    double queue_ms = 0.0;         // submit -> slot
    double first_token_ms = 0.0;   // submit -> first token (0 if none)
    double total_ms = 0.0;         // submit -> finish
};

// Receives one request's tokens, on the scheduler's delivery thread.
class TokenSink {
public:
    virtual ~TokenSink() = default;
    // A sampled token (stop ids are not delivered), with its log-probabilities when the request's
    // SamplerParams asked for them; return false when the answer is complete after it (a stop
    // string matched): no token after it is delivered, the summary says FinishReason::stop_string
    // and counts the tokens delivered (the model may have run a step or two further meanwhile).
    virtual bool on_token(const SampledToken& token) = 0;
    // Called exactly once, last.
    virtual void on_finish(const GenerationSummary& summary) = 0;
};

// A submitted request: cancel it from any thread.
class GenerationJob {
public:
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

private:
    friend class Scheduler;
    std::atomic<bool> cancelled_{false};
    std::atomic<bool> answered_{false};  // the sink said the answer is complete
    // The delivery thread's own record: tokens delivered, and what a sink that threw said.
    int64_t delivered_ = 0;
    std::string sink_error_;
};

struct SchedulerStats {
    size_t queued = 0;           // waiting for a slot
    size_t active = 0;           // in a slot
    uint64_t prompt_tokens = 0;  // totals since start
    uint64_t cached_prompt_tokens = 0;  // prompt tokens resumed from the prompt cache
    uint64_t generated_tokens = 0;
    uint64_t finished = 0;
    double decode_seconds = 0.0;  // time spent in Engine::decode
};

// What /slots lists about one slot.
struct SlotInfo {
    int id = 0;
    bool processing = false;
    int64_t n_tokens = 0;  // the tokens its session holds (kept after a request ends)
};

// The result of a slot save or restore (llama-server's fields).
struct SlotFileResult {
    int64_t n_tokens = 0;
    uint64_t n_bytes = 0;
    double ms = 0.0;
};

class Scheduler {
public:
    // Throws k3::Error for bad options. Starts the scheduler thread.
    Scheduler(const Engine& engine, const SchedulerOptions& options);
    ~Scheduler();  // cancels everything still running, then joins
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues a request. Returns nullptr when the queue is full or the scheduler is stopping.
    // Throws k3::Error for a request that can never run (empty prompt, max_tokens == 0, an id
    // outside the vocabulary, prompt + max_tokens beyond the context).
    std::shared_ptr<GenerationJob> submit(GenerationRequest request, std::shared_ptr<TokenSink> sink);

    // Rejects new requests and cancels queued and running ones (their sinks finish with
    // JobOutcome::cancelled). Idempotent; the destructor calls it.
    void shutdown();

    SchedulerStats stats() const;
    int64_t ctx_size() const { return options_.ctx_size; }
    int n_slots() const { return options_.n_slots; }
    PrefixCache& cache() { return cache_; }

    std::vector<SlotInfo> slots() const;
    // An idle slot's session to a file / from a file (then also in the prompt cache, so the next
    // request resumes from it) / emptied. Throws k3::Error for an id out of range, a busy slot, a
    // file that cannot be written, or one that is not this model's session state. A save returns
    // once the file is complete under its name; it is written by a thread of its own, from a
    // snapshot, so the slot serves requests meanwhile.
    SlotFileResult save_slot(int id, const std::string& path);
    SlotFileResult restore_slot(int id, const std::string& path);
    int64_t erase_slot(int id);  // returns the tokens dropped

private:
    struct Pending;
    struct Slot;
    struct Delivery;
    void run();
    void deliver_all();  // the delivery thread
    void post(Delivery delivery);
    void admit_locked(std::vector<std::unique_ptr<Slot>>& admitted);
    void step(std::vector<std::unique_ptr<Slot>>& active);
    void start(Slot& slot);
    Session& claim_idle(int id);  // takes an idle slot out of service (for slot files)
    void release(int id);

    const Engine& engine_;
    SchedulerOptions options_;
    PrefixCache cache_;
    std::vector<std::unique_ptr<Session>> sessions_;  // by slot id
    std::vector<int> free_ids_;                       // idle slots
    std::vector<int64_t> slot_tokens_;                // by slot id, as of the last step
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::unique_ptr<Pending>> queue_;
    bool stopping_ = false;
    SchedulerStats stats_;
    std::mutex delivery_mutex_;
    std::condition_variable delivery_wake_;
    std::deque<Delivery> deliveries_;
    bool delivery_stopping_ = false;
    SessionFileWriter slot_writer_;  // slot files (save_slot)
    std::thread thread_, delivery_thread_;
};

// One request generated to its end, for a caller that waits (`k3 run`, `k3 chat`): the tokens
// delivered and the summary.
struct GenerationResult {
    std::vector<int32_t> tokens;
    GenerationSummary summary;
};

// Submits `request` and waits for it; `on_token` is called on the scheduler thread as
// TokenSink::on_token is. `interrupted` (optional, polled from the waiting thread) cancels the
// job when it returns true. Throws k3::Error as submit() does, or when the queue is full.
GenerationResult generate(Scheduler& scheduler, GenerationRequest request,
                          std::function<bool(const SampledToken&)> on_token,
                          const std::function<bool()>& interrupted = {});

}  // namespace k3::runtime
