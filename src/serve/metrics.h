// What GET /metrics reports, in Prometheus' text format: requests by
// endpoint and status, prompt and generated tokens, the queue and the batch
// as they are now, decode steps, and histograms of the time to the first
// token, the time between tokens and the whole request.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace forge::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Lines "NAME_bucket{le=...} c", "NAME_sum", "NAME_count".
  std::string text(const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& endpoint, int status);
  void tokens(int64_t prompt, int64_t generated);
  void step(int64_t batch);  // one decode step of `batch` sequences
  void set_queue(int64_t waiting, int64_t running);
  void first_token(double seconds);
  void inter_token(double seconds);
  void finished(double seconds);
  std::string text() const;  // the Prometheus exposition

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, steps_ = 0, stepped_rows_ = 0;
  int64_t waiting_ = 0, running_ = 0;
  Histogram ttft_, itl_, latency_, batch_;
};

}  // namespace forge::serve
