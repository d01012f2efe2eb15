#include "runtime/scheduler.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>

#include "model/kda.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "runtime/session_file.h"
#include "util/error.h"

namespace k3::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

struct Scheduler::Pending {
    GenerationRequest request;
    std::shared_ptr<TokenSink> sink;
    std::shared_ptr<GenerationJob> job;
    Clock::time_point submitted;
};

// What the delivery thread hands to a sink: a token, or (last) the summary.
struct Scheduler::Delivery {
    std::shared_ptr<TokenSink> sink;
    std::shared_ptr<GenerationJob> job;
    std::optional<SampledToken> token;
    std::optional<GenerationSummary> summary;
};

// A request holding a slot's session: it resumes from the prompt cache, feeds the rest of its
// prompt in chunks (capturing states at checkpoint positions for the cache), then one sampled token per step.
struct Scheduler::Slot {
    std::unique_ptr<Pending> pending;
    int id;
    Session* session;
    Sampler sampler;
    bool started = false;
    size_t n_fed = 0;     // prompt tokens consumed
    std::vector<int64_t> checkpoints;  // prompt positions still to store in the cache, ascending
    size_t next_checkpoint = 0;
    int32_t last = 0;     // the token to feed next once the prompt is in
    GenerationSummary summary;
    bool done = false;

    Slot(std::unique_ptr<Pending> p, int slot_id, Session* s)
        : pending(std::move(p)), id(slot_id), session(s), sampler(pending->request.params.sampling) {}
    bool prefilling() const { return n_fed < pending->request.prompt.size(); }
    bool at_checkpoint() const {
        return next_checkpoint < checkpoints.size() && int64_t(n_fed) == checkpoints[next_checkpoint];
    }
};

Scheduler::Scheduler(const Engine& engine, const SchedulerOptions& options)
    : engine_(engine), options_(options), cache_(engine, options.cache), slot_writer_(engine.identity()) {
    if (options_.n_slots < 1) throw Error("scheduler: n_slots must be at least 1");
    if (options_.prefill_chunk < 1) throw Error("scheduler: prefill_chunk must be at least 1");
    if (options_.ctx_size <= 0) options_.ctx_size = engine.n_ctx_train();
    if (options_.ctx_size < 2) throw Error("scheduler: ctx_size must be at least 2");
    for (int i = 0; i < options_.n_slots; ++i) {
        sessions_.push_back(engine.new_session());
        free_ids_.push_back(options_.n_slots - 1 - i);  // slot 0 is taken first
    }
    slot_tokens_.assign(size_t(options_.n_slots), 0);
    delivery_thread_ = std::thread([this] { deliver_all(); });
    thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
    shutdown();
    thread_.join();
    {
        std::lock_guard lock(delivery_mutex_);
        delivery_stopping_ = true;
    }
    delivery_wake_.notify_one();
    delivery_thread_.join();  // after what is still queued has been delivered
}

void Scheduler::post(Delivery delivery) {
    {
        std::lock_guard lock(delivery_mutex_);
        deliveries_.push_back(std::move(delivery));
    }
    delivery_wake_.notify_one();
}

void Scheduler::deliver_all() {
    for (;;) {
        Delivery delivery;
        {
            std::unique_lock lock(delivery_mutex_);
            delivery_wake_.wait(lock, [&] { return delivery_stopping_ || !deliveries_.empty(); });
            if (deliveries_.empty()) return;
            delivery = std::move(deliveries_.front());
            deliveries_.pop_front();
        }
        GenerationJob& job = *delivery.job;
        if (delivery.token) {
            if (job.answered_ || !job.sink_error_.empty()) continue;  // nothing after the answer's end
            ++job.delivered_;
            // Calls into a sink are guarded so that one faulty consumer cannot take the loop down.
            try {
                if (!delivery.sink->on_token(*delivery.token)) job.answered_ = true;
            } catch (const std::exception& e) {
                job.sink_error_ = e.what();
                job.cancel();
            }
            continue;
        }
        GenerationSummary summary = *delivery.summary;
        summary.n_generated = job.delivered_;
        if (!job.sink_error_.empty()) {
            summary.outcome = JobOutcome::error;
            summary.error = job.sink_error_;
        } else if (job.answered_) {  // whatever the model did after the answer was complete
            summary.outcome = JobOutcome::finished;
            summary.finish = FinishReason::stop_string;
            summary.error.clear();
        }
        try {
            delivery.sink->on_finish(summary);
        } catch (const std::exception&) {
            // The request is over either way; a sink that fails here has nothing left to tell.
        }
    }
}

std::shared_ptr<GenerationJob> Scheduler::submit(GenerationRequest request, std::shared_ptr<TokenSink> sink) {
    if (request.prompt.empty()) throw Error("the prompt has no tokens");
    const int64_t max_tokens = request.params.max_tokens;
    if (max_tokens == 0) throw Error("max_tokens must be at least 1");
    const int64_t n_prompt = int64_t(request.prompt.size());
    if (n_prompt >= options_.ctx_size)
        throw Error("the prompt has " + std::to_string(n_prompt) + " tokens; the context holds " +
                    std::to_string(options_.ctx_size));
    if (max_tokens > options_.ctx_size - n_prompt)
        throw Error("prompt (" + std::to_string(n_prompt) + " tokens) + max_tokens (" + std::to_string(max_tokens) +
                    ") exceeds the context of " + std::to_string(options_.ctx_size) + " tokens");
    for (int32_t id : request.prompt)
        if (id < 0 || id >= engine_.n_vocab())
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                        std::to_string(engine_.n_vocab() - 1) + ")");
    std::ranges::sort(request.params.stop_ids);  // looked up by binary search in step()
    auto pending = std::make_unique<Pending>(
        Pending{std::move(request), std::move(sink), std::make_shared<GenerationJob>(), Clock::now()});
    std::shared_ptr<GenerationJob> job = pending->job;
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || queue_.size() >= options_.queue_capacity) return nullptr;
        queue_.push_back(std::move(pending));
        stats_.queued = queue_.size();
    }
    wake_.notify_one();
    return job;
}

void Scheduler::shutdown() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
}

SchedulerStats Scheduler::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

// Moves queued requests into free slots (under the lock); cancelled ones go along and are
// finished by step() without running.
void Scheduler::admit_locked(std::vector<std::unique_ptr<Slot>>& active) {
    while (!queue_.empty() && !free_ids_.empty()) {
        const int id = free_ids_.back();
        auto slot = std::make_unique<Slot>(std::move(queue_.front()), id, sessions_[size_t(id)].get());
        queue_.pop_front();
        free_ids_.pop_back();
        slot->summary.slot = id;
        slot->summary.n_prompt = int64_t(slot->pending->request.prompt.size());
        slot->summary.queue_ms = ms_between(slot->pending->submitted, Clock::now());
        active.push_back(std::move(slot));
    }
}

void Scheduler::run() {
    std::vector<std::unique_ptr<Slot>> active;
    for (;;) {
        bool stopping = false;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
            stopping = stopping_;
            admit_locked(active);
            // Once stopping, whatever is still queued is drained through the slots and cancelled.
            if (stopping)
                for (auto& slot : active) slot->pending->job->cancel();
            stats_.queued = queue_.size();
            stats_.active = active.size();
        }
        if (stopping && active.empty()) return;
        step(active);
    }
}

// Resumes the slot's session from the longest cached prefix of its prompt (or starts it empty).
void Scheduler::start(Slot& slot) {
    const GenerationRequest& request = slot.pending->request;
    slot.started = true;
    if (request.cache_prompt) slot.checkpoints = resume_from_cache(cache_, *slot.session, request.prompt, request.boundaries);
    else slot.session->reset();
    slot.n_fed = size_t(slot.session->position());
    slot.summary.n_cached = slot.session->position();
}

void Scheduler::step(std::vector<std::unique_ptr<Slot>>& active) {
    auto end = [](Slot& slot, JobOutcome outcome, std::string error = {}) {
        slot.done = true;
        slot.summary.outcome = outcome;
        slot.summary.error = std::move(error);
        slot.summary.total_ms = ms_between(slot.pending->submitted, Clock::now());
    };
    auto finish = [&](Slot& slot, FinishReason reason) {
        slot.summary.finish = reason;
        end(slot, JobOutcome::finished);
    };
    for (auto& slot : active) {
        if (slot->pending->job->answered_) finish(*slot, FinishReason::stop_string);
        else if (slot->pending->job->cancelled()) end(*slot, JobOutcome::cancelled);
    }

    std::vector<SequenceInput> inputs;
    std::vector<Slot*> running;
    uint64_t cached_tokens = 0;
    for (auto& slot : active) {
        if (slot->done) continue;
        if (!slot->started) {
            start(*slot);
            cached_tokens += uint64_t(slot->summary.n_cached);
        }
        const std::vector<int32_t>& prompt = slot->pending->request.prompt;
        SequenceInput input;
        input.session = slot->session;
        if (slot->prefilling()) {
            const size_t n = std::min(prompt.size() - slot->n_fed, size_t(options_.prefill_chunk));
            // Checkpoints inside this chunk are captured by its pass (a pause would cost a pass
            // of its own); one at its end is a snapshot after it. One off the pass's KDA chunks
            // (a --prefill-chunk that is no multiple of 16) is skipped: it would not be exact.
            for (size_t c = slot->next_checkpoint; c < slot->checkpoints.size(); ++c) {
                const int64_t offset = slot->checkpoints[c] - int64_t(slot->n_fed);
                if (offset < int64_t(n) && offset % model::kKdaChunk == 0) input.capture_at.push_back(offset);
            }
            input.tokens = std::span(prompt.data() + slot->n_fed, n);
        } else {
            input.tokens = std::span(&slot->last, 1);
        }
        inputs.push_back(std::move(input));
        running.push_back(slot.get());
    }
    uint64_t prompt_tokens = 0, generated_tokens = 0;
    double decode_seconds = 0.0;
    if (!inputs.empty()) {
        const Clock::time_point start = Clock::now();
        try {
            engine_.decode(inputs);
        } catch (const std::exception& e) {
            for (Slot* slot : running) end(*slot, JobOutcome::error, e.what());
            running.clear();
        }
        decode_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    for (size_t i = 0; i < running.size(); ++i) {
        Slot& slot = *running[i];
        if (slot.prefilling()) {
            slot.n_fed += inputs[i].tokens.size();
            prompt_tokens += inputs[i].tokens.size();
            for (const SessionSnapshot& captured : inputs[i].captured) cache_.insert(captured);
            while (slot.next_checkpoint < slot.checkpoints.size() && slot.checkpoints[slot.next_checkpoint] < int64_t(slot.n_fed))
                ++slot.next_checkpoint;
            if (slot.at_checkpoint()) {
                cache_.insert(slot.session->snapshot());
                ++slot.next_checkpoint;
            }
            if (slot.prefilling()) continue;
        }
        const GenerationParams& params = slot.pending->request.params;
        SampledToken sampled;
        try {
            sampled = slot.sampler.sample_token(inputs[i].logits);
        } catch (const std::exception& e) {  // e.g. a grammar no token can continue
            end(slot, JobOutcome::error, e.what());
            continue;
        }
        const int32_t token = sampled.id;
        if (std::binary_search(params.stop_ids.begin(), params.stop_ids.end(), token)) {
            finish(slot, FinishReason::stop_id);
            continue;
        }
        if (slot.summary.n_generated++ == 0)
            slot.summary.first_token_ms = ms_between(slot.pending->submitted, Clock::now());
        ++generated_tokens;
        post({slot.pending->sink, slot.pending->job, std::move(sampled), std::nullopt});
        if (params.max_tokens > 0 && slot.summary.n_generated >= params.max_tokens) {
            finish(slot, FinishReason::length);
        } else if (slot.session->position() + 1 >= options_.ctx_size) {
            finish(slot, FinishReason::context);  // no room to feed the token
        } else {
            slot.last = token;
        }
    }
    // Finished slots go back first (their sessions keep their tokens for /slots), then their sinks
    // are told: a client that acts on the answer (e.g. saves the slot) finds the slot idle.
    std::vector<std::unique_ptr<Slot>> finished;
    for (auto& slot : active)
        if (slot->done) finished.push_back(std::move(slot));
    std::erase_if(active, [](const std::unique_ptr<Slot>& slot) { return !slot; });
    {
        std::lock_guard lock(mutex_);
        for (const auto& slot : finished) free_ids_.push_back(slot->id);
        for (const auto& slot : active) slot_tokens_[size_t(slot->id)] = slot->session->position();
        for (const auto& slot : finished) slot_tokens_[size_t(slot->id)] = slot->session->position();
        stats_.active = active.size();
        stats_.cached_prompt_tokens += cached_tokens;
        stats_.prompt_tokens += prompt_tokens;
        stats_.generated_tokens += generated_tokens;
        stats_.decode_seconds += decode_seconds;
        stats_.finished += finished.size();
    }
    for (const auto& slot : finished) post({slot->pending->sink, slot->pending->job, std::nullopt, slot->summary});
}

std::vector<SlotInfo> Scheduler::slots() const {
    std::lock_guard lock(mutex_);
    std::vector<SlotInfo> slots;
    for (int id = 0; id < options_.n_slots; ++id)
        slots.push_back({id, std::find(free_ids_.begin(), free_ids_.end(), id) == free_ids_.end(),
                         slot_tokens_[size_t(id)]});
    return slots;
}

Session& Scheduler::claim_idle(int id) {
    std::lock_guard lock(mutex_);
    if (id < 0 || id >= options_.n_slots)
        throw Error("slot id " + std::to_string(id) + " is out of range (0.." + std::to_string(options_.n_slots - 1) + ")");
    const auto it = std::find(free_ids_.begin(), free_ids_.end(), id);
    if (it == free_ids_.end()) throw Error("slot " + std::to_string(id) + " is busy");
    free_ids_.erase(it);
    return *sessions_[size_t(id)];
}

void Scheduler::release(int id) {
    {
        std::lock_guard lock(mutex_);
        free_ids_.push_back(id);
        slot_tokens_[size_t(id)] = sessions_[size_t(id)]->position();
    }
    wake_.notify_one();  // a queued request may be waiting for it
}

namespace {

// Gives a claimed slot back however the file operation ends.
struct SlotClaim {
    std::function<void()> release;
    ~SlotClaim() { release(); }
};

}  // namespace

SlotFileResult Scheduler::save_slot(int id, const std::string& path) {
    const Clock::time_point start = Clock::now();
    SessionSnapshot state;
    {
        Session& session = claim_idle(id);
        const SlotClaim claim{[&] { release(id); }};
        state = session.snapshot();  // shares the session's pages: the slot may go on at once
    }
    auto written = std::make_shared<std::promise<uint64_t>>();
    std::future<uint64_t> bytes = written->get_future();
    slot_writer_.write(state, path, [written](uint64_t n, const std::string& error) {
        if (error.empty()) written->set_value(n);
        else written->set_exception(std::make_exception_ptr(Error(error)));
    });
    return {int64_t(state->tokens.size()), bytes.get(), ms_between(start, Clock::now())};
}

SlotFileResult Scheduler::restore_slot(int id, const std::string& path) {
    Session& session = claim_idle(id);
    const SlotClaim claim{[&] { release(id); }};
    const Clock::time_point start = Clock::now();
    const auto state = std::make_shared<const SessionState>(read_session_file(path, engine_, engine_.identity()));
    session.restore(state);
    cache_.insert(state);
    return {session.position(), std::filesystem::file_size(path), ms_between(start, Clock::now())};
}

int64_t Scheduler::erase_slot(int id) {
    Session& session = claim_idle(id);
    const SlotClaim claim{[&] { release(id); }};
    const int64_t n = session.position();
    session.reset();
    return n;
}

namespace {

// Hands tokens to a callback and the summary to a waiting thread.
class WaitingSink final : public TokenSink {
public:
    explicit WaitingSink(std::function<bool(const SampledToken&)> on_token) : on_token_(std::move(on_token)) {}
    bool on_token(const SampledToken& token) override {
        tokens_.push_back(token.id);
        return on_token_(token);
    }
    void on_finish(const GenerationSummary& summary) override {
        std::lock_guard lock(mutex_);
        summary_ = summary;
        finished_.notify_all();
    }
    // The result once finished; cancels the job first if `interrupted` says so (polled).
    GenerationResult wait(GenerationJob& job, const std::function<bool()>& interrupted) {
        std::unique_lock lock(mutex_);
        while (!summary_) {
            if (interrupted && interrupted()) job.cancel();
            finished_.wait_for(lock, std::chrono::milliseconds(interrupted ? 50 : 1000), [&] { return summary_.has_value(); });
        }
        return {std::move(tokens_), *summary_};
    }

private:
    std::function<bool(const SampledToken&)> on_token_;
    std::vector<int32_t> tokens_;  // only the scheduler thread touches it until on_finish
    std::mutex mutex_;
    std::condition_variable finished_;
    std::optional<GenerationSummary> summary_;
};

}  // namespace

GenerationResult generate(Scheduler& scheduler, GenerationRequest request,
                          std::function<bool(const SampledToken&)> on_token, const std::function<bool()>& interrupted) {
    auto sink = std::make_shared<WaitingSink>(std::move(on_token));
    const std::shared_ptr<GenerationJob> job = scheduler.submit(std::move(request), sink);
    if (!job) throw Error("the scheduler is stopping or its queue is full");
    return sink->wait(*job, interrupted);
}

}  // namespace k3::runtime
