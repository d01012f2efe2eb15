#include "server/choice_group.h"

namespace k3::server {

namespace {

std::string dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

ChoiceGroup::ChoiceGroup(size_t n, std::shared_ptr<ResponseChannel> channel, Json head, bool stream,
                         bool include_usage)
    : n_(n),
      channel_(std::move(channel)),
      head_(std::move(head)),
      stream_(stream),
      include_usage_(include_usage),
      entries_(n),
      summaries_(n) {}

void ChoiceGroup::set_launcher(std::function<void()> launch) {
    std::lock_guard lock(mutex_);
    launch_ = std::move(launch);
}

void ChoiceGroup::choice_started(size_t index) {
    if (index != 0) return;
    std::function<void()> launch;
    {
        std::lock_guard lock(mutex_);
        launch = std::move(launch_);
        launch_ = nullptr;
    }
    if (launch) launch();
}

void ChoiceGroup::add_job(std::shared_ptr<runtime::GenerationJob> job) {
    std::lock_guard lock(mutex_);
    if (cancelled_) job->cancel();
    jobs_.push_back(std::move(job));
}

void ChoiceGroup::cancel_all() {
    std::lock_guard lock(mutex_);
    cancel_locked();
}

void ChoiceGroup::cancel_locked() {
    cancelled_ = true;
    if (launch_) {  // the other choices will never run: they count as ended, cut short
        launch_ = nullptr;
        for (size_t i = 1; i < n_; ++i) summaries_[i].outcome = runtime::JobOutcome::cancelled;
        finished_ += n_ - 1;
    }
    for (const auto& job : jobs_) job->cancel();
}

int64_t ChoiceGroup::completion_tokens() const {
    int64_t completion = 0;
    for (const runtime::GenerationSummary& summary : summaries_) completion += summary.n_generated;
    return completion;
}

Json usage_json(const runtime::GenerationSummary& summary) {
    return {{"prompt_tokens", summary.n_prompt},
            {"completion_tokens", summary.n_generated},
            {"total_tokens", summary.n_prompt + summary.n_generated},
            {"prompt_tokens_details", {{"cached_tokens", summary.n_cached}}}};
}

Json ChoiceGroup::usage() const {
    runtime::GenerationSummary total = summaries_.front();  // the prompt counted once
    total.n_generated = completion_tokens();
    return usage_json(total);
}

void ChoiceGroup::finish_choice(size_t index, Json entry, const runtime::GenerationSummary& summary,
                                std::optional<HttpResponse> error) {
    choice_started(index);  // a choice 0 that ended before any token still lets the others run
    std::unique_lock lock(mutex_);
    entries_[index] = std::move(entry);
    summaries_[index] = summary;
    const bool failed = error.has_value() || summary.outcome != runtime::JobOutcome::finished;
    if (error && !error_) error_ = std::move(error);
    if (failed) cancel_locked();
    if (++finished_ < n_) return;
    // The last choice: every other sink is done with the channel.
    lock.unlock();
    channel_->set_tokens({summaries_.front().n_prompt, completion_tokens()});
    bool all_finished = true;
    for (const runtime::GenerationSummary& s : summaries_)
        all_finished = all_finished && s.outcome == runtime::JobOutcome::finished;
    if (!stream_) {
        if (error_) return channel_->respond(*error_);
        Json body = head_;
        body["choices"] = Json(entries_);
        body["usage"] = usage();
        return channel_->respond(HttpResponse{200, "application/json", dump(body), {}});
    }
    if (include_usage_ && all_finished) {
        Json chunk = head_;
        chunk["choices"] = Json::array();
        chunk["usage"] = usage();
        channel_->send("data: " + dump(chunk) + "\n\n");
    }
    channel_->send("data: [DONE]\n\n");
    channel_->finish();
}

}  // namespace k3::server
