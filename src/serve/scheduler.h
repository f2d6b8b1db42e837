// Continuous batching: one thread owns the model and runs every request.
// Requests wait in a bounded queue; between decode steps each waiting one
// takes a free row of the shared KV cache and its prompt is prefilled, then
// one batched forward per step advances every running sequence by a token
// (CausalLM::decode_rows, sequences at their own positions). A sequence
// leaves at a stop id, at its token limit, or as soon as it is cancelled (a
// client that disconnected), freeing its row for the next request. Sampling
// runs on the model's device; a request's token i uses Philox step i, so its
// output does not depend on what else is in the batch.
//
// Every family has per-row decode (GPT-2 and the Llama family). Where the
// rows cannot be used (a sliding-window model whose context exceeds its
// window keeps a ring cache, one position per slot) the same loop serves
// with a cache per sequence and one forward per sequence per step.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "forge/model.h"
#include "forge/ops/sample.h"
#include "serve/metrics.h"

namespace forge::serve {

struct JobSpec {
  std::vector<uint32_t> prompt;
  int64_t max_tokens = 16;
  SampleOptions sample;  // step is set per token
  std::vector<uint32_t> stop_ids;
};

// One generation, shared by the HTTP thread that reads it and the scheduler.
class Job {
 public:
  struct Chunk {
    std::vector<uint32_t> ids;  // new since the last take
    bool done = false;
    std::string finish_reason;  // "stop" (a stop id), "length", "cancelled", "error"
    std::string error;          // what failed, for "error"
  };
  explicit Job(JobSpec spec) : spec_(std::move(spec)), submitted_(std::chrono::steady_clock::now()) {}
  const JobSpec& spec() const { return spec_; }
  // Waits up to `timeout` for new ids or the end; takes what there is.
  Chunk take(std::chrono::milliseconds timeout);
  // Stops the generation (its row is freed before the next step).
  void cancel();
  bool cancelled() const;

 private:
  friend class Scheduler;
  void push(uint32_t id);
  void finish(const std::string& reason, const std::string& error = {});

  JobSpec spec_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint32_t> pending_;
  bool done_ = false, cancelled_ = false;
  std::string reason_, error_;
  // Scheduler-side state.
  int64_t produced_ = 0;
  uint32_t last_ = 0;
  std::chrono::steady_clock::time_point submitted_, last_token_;
  KvCache own_;  // the per-sequence cache when rows cannot be used (a ring)
};

struct SchedulerOptions {
  int64_t max_batch = 8;  // sequences decoded together
  int64_t ctx = 0;        // positions per sequence (prompt + generated); 0: the model's context
  int64_t queue = 64;     // requests waiting for a row (beyond the free rows)
};

class Scheduler {
 public:
  Scheduler(const CausalLM& model, const SchedulerOptions& options, Metrics* metrics);
  ~Scheduler();  // finishes what is in flight
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a generation. ApiError 400 when it does not fit the context, 503
  // when the queue is full or the server is shutting down.
  std::shared_ptr<Job> submit(JobSpec spec);
  // Refuses new work and returns once every queued and running job has ended.
  void shutdown();

  int64_t ctx() const { return ctx_; }
  bool batched() const { return rows_; }  // one forward per step for the whole batch

 private:
  void loop();
  void admit(const std::shared_ptr<Job>& job, int64_t row);
  void step();
  // Records token `id` of the job in `row`; frees the row when the job ends.
  void deliver(int64_t row, uint32_t id);
  void release(int64_t row, const std::string& reason, const std::string& error = {});
  void publish_queue();

  const CausalLM& model_;
  Metrics* metrics_;
  int64_t max_batch_, ctx_, queue_cap_;
  bool rows_ = false;
  KvCache cache_;  // [max_batch rows] when rows_

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> waiting_;
  int64_t busy_ = 0;  // rows holding a job
  bool stopping_ = false;
  std::vector<std::shared_ptr<Job>> slots_;  // by row; null when free
  std::vector<int64_t> pos_;                 // each row's length so far
  std::thread thread_;
};

}  // namespace forge::serve
