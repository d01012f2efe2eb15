#include "server/http_types.h"

namespace k3::server {

// The notifier runs outside the lock: it may post to an I/O thread that calls take() at once.
void ResponseChannel::notify_locked(std::unique_lock<std::mutex>& lock) {
    std::function<void()> notify = notify_;
    lock.unlock();
    if (notify) notify();
}

void ResponseChannel::respond(HttpResponse response) {
    std::unique_lock lock(mutex_);
    if (head_ready_ || finished_) return;
    head_ = std::move(response);
    head_ready_ = finished_ = true;
    notify_locked(lock);
}

void ResponseChannel::start_stream(const std::string& content_type) {
    std::unique_lock lock(mutex_);
    if (head_ready_ || finished_) return;
    head_ = HttpResponse{200, content_type, {}, {{"Cache-Control", "no-cache"}}};
    head_ready_ = streamed_ = true;
    notify_locked(lock);
}

void ResponseChannel::send(std::string bytes) {
    std::unique_lock lock(mutex_);
    if (!streamed_ || finished_ || gone_) return;
    pending_ += bytes;
    notify_locked(lock);
}

void ResponseChannel::finish() {
    std::unique_lock lock(mutex_);
    if (finished_) return;
    finished_ = true;
    notify_locked(lock);
}

void ResponseChannel::on_client_gone(std::function<void()> callback) {
    std::unique_lock lock(mutex_);
    if (gone_) {
        lock.unlock();
        callback();
        return;
    }
    on_gone_ = std::move(callback);
}

void ResponseChannel::client_gone() {
    std::unique_lock lock(mutex_);
    if (gone_) return;
    gone_ = true;
    std::function<void()> callback = std::move(on_gone_);
    lock.unlock();
    if (callback) callback();
}

void ResponseChannel::set_tokens(RequestTokens tokens) {
    std::lock_guard lock(mutex_);
    tokens_ = tokens;
}

std::optional<RequestTokens> ResponseChannel::tokens() {
    std::lock_guard lock(mutex_);
    return tokens_;
}

void ResponseChannel::set_notifier(std::function<void()> notify) {
    std::unique_lock lock(mutex_);
    notify_ = std::move(notify);
    if (head_ready_ || finished_) notify_locked(lock);
}

ResponseChannel::Taken ResponseChannel::take() {
    std::lock_guard lock(mutex_);
    Taken taken;
    if (head_ready_ && !head_taken_) {
        head_taken_ = taken.has_head = true;
        taken.streamed = streamed_;
        taken.head = head_;
    }
    taken.bytes = std::move(pending_);
    pending_.clear();
    taken.finished = finished_ && head_taken_;
    return taken;
}

}  // namespace k3::server
