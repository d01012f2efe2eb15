#include "runtime/scheduler.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "runtime/engine.h"
#include "runtime/session.h"
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

// A request holding a session: its prompt is fed in chunks, then one sampled token per step.
struct Scheduler::Slot {
    std::unique_ptr<Pending> pending;
    std::unique_ptr<Session> session;
    Sampler sampler;
    size_t n_fed = 0;     // prompt tokens consumed
    int32_t last = 0;     // the token to feed next once the prompt is in
    GenerationSummary summary;
    bool done = false;

    Slot(std::unique_ptr<Pending> p, std::unique_ptr<Session> s)
        : pending(std::move(p)), session(std::move(s)), sampler(pending->request.params.sampling) {}
    bool prefilling() const { return n_fed < pending->request.prompt.size(); }
};

Scheduler::Scheduler(const Engine& engine, const SchedulerOptions& options) : engine_(engine), options_(options) {
    if (options_.n_slots < 1) throw Error("scheduler: n_slots must be at least 1");
    if (options_.prefill_chunk < 1) throw Error("scheduler: prefill_chunk must be at least 1");
    if (options_.ctx_size <= 0) options_.ctx_size = engine.n_ctx_train();
    if (options_.ctx_size < 2) throw Error("scheduler: ctx_size must be at least 2");
    for (int i = 0; i < options_.n_slots; ++i) free_sessions_.push_back(engine.new_session());
    thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
    shutdown();
    thread_.join();
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
    while (!queue_.empty() && !free_sessions_.empty()) {
        auto slot = std::make_unique<Slot>(std::move(queue_.front()), std::move(free_sessions_.back()));
        queue_.pop_front();
        free_sessions_.pop_back();
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

void Scheduler::step(std::vector<std::unique_ptr<Slot>>& active) {
    auto finish = [](Slot& slot, JobOutcome outcome, FinishReason reason, std::string error = {}) {
        slot.done = true;
        slot.summary.outcome = outcome;
        slot.summary.finish = reason;
        slot.summary.error = std::move(error);
        slot.summary.total_ms = ms_between(slot.pending->submitted, Clock::now());
    };
    // Calls into a sink are guarded so that one faulty consumer cannot take the loop down.
    auto deliver = [&](Slot& slot, const SampledToken& token) {
        try {
            return slot.pending->sink->on_token(token);
        } catch (const std::exception& e) {
            finish(slot, JobOutcome::error, FinishReason::caller, e.what());
            return false;
        }
    };
    for (auto& slot : active)
        if (slot->pending->job->cancelled()) finish(*slot, JobOutcome::cancelled, FinishReason::caller);

    std::vector<SequenceInput> inputs;
    std::vector<Slot*> running;
    for (auto& slot : active) {
        if (slot->done) continue;
        const std::vector<int32_t>& prompt = slot->pending->request.prompt;
        SequenceInput input;
        input.session = slot->session.get();
        if (slot->prefilling()) {
            const size_t n = std::min(prompt.size() - slot->n_fed, size_t(options_.prefill_chunk));
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
            for (Slot* slot : running) finish(*slot, JobOutcome::error, FinishReason::caller, e.what());
            running.clear();
        }
        decode_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    for (size_t i = 0; i < running.size(); ++i) {
        Slot& slot = *running[i];
        if (slot.prefilling()) {
            slot.n_fed += inputs[i].tokens.size();
            prompt_tokens += inputs[i].tokens.size();
            if (slot.prefilling()) continue;
        }
        const GenerationParams& params = slot.pending->request.params;
        SampledToken sampled;
        try {
            sampled = slot.sampler.sample_token(inputs[i].logits);
        } catch (const std::exception& e) {  // e.g. a grammar no token can continue
            finish(slot, JobOutcome::error, FinishReason::caller, e.what());
            continue;
        }
        const int32_t token = sampled.id;
        if (std::binary_search(params.stop_ids.begin(), params.stop_ids.end(), token)) {
            finish(slot, JobOutcome::finished, FinishReason::stop_id);
            continue;
        }
        if (slot.summary.n_generated++ == 0)
            slot.summary.first_token_ms = ms_between(slot.pending->submitted, Clock::now());
        ++generated_tokens;
        if (!deliver(slot, sampled)) {
            if (!slot.done) finish(slot, JobOutcome::finished, FinishReason::caller);
        } else if (params.max_tokens > 0 && slot.summary.n_generated >= params.max_tokens) {
            finish(slot, JobOutcome::finished, FinishReason::length);
        } else if (slot.session->position() + 1 >= options_.ctx_size) {
            finish(slot, JobOutcome::finished, FinishReason::context);  // no room to feed the token
        } else {
            slot.last = token;
        }
    }
    // Finished slots: tell the sink, free the sequence's memory, hand the session back.
    std::vector<std::unique_ptr<Session>> freed;
    uint64_t n_finished = 0;
    for (auto& slot : active) {
        if (!slot->done) continue;
        try {
            slot->pending->sink->on_finish(slot->summary);
        } catch (const std::exception&) {
            // The request is over either way; a sink that fails here has nothing left to tell.
        }
        slot->session->reset();
        freed.push_back(std::move(slot->session));
        ++n_finished;
    }
    std::erase_if(active, [](const std::unique_ptr<Slot>& slot) { return slot->done; });
    std::lock_guard lock(mutex_);
    for (auto& session : freed) free_sessions_.push_back(std::move(session));
    stats_.active = active.size();
    stats_.prompt_tokens += prompt_tokens;
    stats_.generated_tokens += generated_tokens;
    stats_.decode_seconds += decode_seconds;
    stats_.finished += n_finished;
}

}  // namespace k3::runtime
