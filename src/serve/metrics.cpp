#include "serve/metrics.h"

#include <sstream>

namespace forge::serve {

namespace {

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::text(const std::string& name) const {
  std::string s;
  uint64_t c = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    c += counts_[i];
    s += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(c) + "\n";
  }
  s += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  s += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return s;
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}),
      latency_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}),
      batch_({1, 2, 4, 8, 16, 32, 64, 128}) {}

void Metrics::request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::tokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_tokens_ += uint64_t(prompt);
  generated_tokens_ += uint64_t(generated);
}

void Metrics::step(int64_t batch) {
  std::lock_guard<std::mutex> l(mu_);
  ++steps_;
  stepped_rows_ += uint64_t(batch);
  batch_.observe(double(batch));
}

void Metrics::set_queue(int64_t waiting, int64_t running) {
  std::lock_guard<std::mutex> l(mu_);
  waiting_ = waiting;
  running_ = running;
}

void Metrics::first_token(double s) {
  std::lock_guard<std::mutex> l(mu_);
  ttft_.observe(s);
}

void Metrics::inter_token(double s) {
  std::lock_guard<std::mutex> l(mu_);
  itl_.observe(s);
}

void Metrics::finished(double s) {
  std::lock_guard<std::mutex> l(mu_);
  latency_.observe(s);
}

std::string Metrics::text() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string s;
  s += "# HELP forge_requests_total HTTP requests answered, by endpoint and status.\n";
  s += "# TYPE forge_requests_total counter\n";
  for (const auto& [k, v] : requests_)
    s += "forge_requests_total{endpoint=\"" + k.first + "\",status=\"" + std::to_string(k.second) + "\"} " +
         std::to_string(v) + "\n";
  auto one = [&](const char* name, const char* type, const char* help, double v) {
    s += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + num(v) +
         "\n";
  };
  one("forge_prompt_tokens_total", "counter", "Prompt tokens prefilled.", double(prompt_tokens_));
  one("forge_generated_tokens_total", "counter", "Tokens generated.", double(generated_tokens_));
  one("forge_decode_steps_total", "counter", "Batched decode steps.", double(steps_));
  one("forge_queue_length", "gauge", "Requests waiting for a batch slot.", double(waiting_));
  one("forge_batch_size", "gauge", "Sequences in the running batch.", double(running_));
  auto hist = [&](const char* name, const char* help, const Histogram& h) {
    s += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n" + h.text(name);
  };
  hist("forge_decode_step_batch", "Sequences per decode step.", batch_);
  hist("forge_time_to_first_token_seconds", "From a request's arrival to its first token.", ttft_);
  hist("forge_inter_token_seconds", "Between consecutive tokens of a request.", itl_);
  hist("forge_request_seconds", "From a request's arrival to its last token.", latency_);
  return s;
}

}  // namespace forge::serve
