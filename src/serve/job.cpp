#include "serve/scheduler.h"

namespace forge::serve {

Job::Chunk Job::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, timeout, [&] { return !pending_.empty() || done_; });
  Chunk c;
  c.ids.swap(pending_);
  c.done = done_;
  c.finish_reason = reason_;
  c.error = error_;
  return c;
}

void Job::cancel() {
  std::lock_guard<std::mutex> l(mu_);
  cancelled_ = true;
}

bool Job::cancelled() const {
  std::lock_guard<std::mutex> l(mu_);
  return cancelled_;
}

void Job::push(uint32_t id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    pending_.push_back(id);
  }
  cv_.notify_all();
}

void Job::finish(const std::string& reason, const std::string& error) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (done_) return;
    done_ = true;
    reason_ = reason;
    error_ = error;
  }
  cv_.notify_all();
}

}  // namespace forge::serve
