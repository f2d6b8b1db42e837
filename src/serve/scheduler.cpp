#include "serve/scheduler.h"

#include <algorithm>

#include "forge/generate.h"
#include "forge/ops.h"
#include "serve/api_error.h"

namespace forge::serve {

namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// ids [n] for rows of logits [n, V]: the greedy rows in one call, each
// sampled row drawn alone as row 0 (as forge::generate draws it), so a seeded
// request gets the same tokens whatever row it runs in. Null options: greedy.
std::vector<uint32_t> sample_rows(const Tensor& logits, const std::vector<const SampleOptions*>& so) {
  const int64_t n = logits.dim(0);
  std::vector<uint32_t> ids(size_t(n), 0);
  const bool any_greedy = std::any_of(so.begin(), so.end(), [](auto* o) { return !o || o->temperature == 0.0f; });
  if (any_greedy) ids = sample(logits, SampleOptions{}).to_vector<uint32_t>();
  for (int64_t r = 0; r < n; ++r) {
    const SampleOptions* o = so[size_t(r)];
    if (!o || o->temperature == 0.0f) continue;
    // Row r gathered as an embedding row (a slice need not be aligned for a binding).
    const Tensor row = n == 1 ? logits : embedding(Tensor::from_vector(std::vector<uint32_t>{uint32_t(r)}, {1}), logits);
    ids[size_t(r)] = sample(row, *o).to_vector<uint32_t>()[0];
  }
  return ids;
}

}  // namespace

Scheduler::Scheduler(const CausalLM& model, const SchedulerOptions& o, Metrics* metrics)
    : model_(model), metrics_(metrics), max_batch_(o.max_batch), queue_cap_(o.queue) {
  if (o.max_batch < 1) throw ValueError("[serve] --max-batch must be >= 1, got " + std::to_string(o.max_batch));
  if (o.queue < 0) throw ValueError("[serve] --queue must be >= 0, got " + std::to_string(o.queue));
  if (o.ctx < 0 || o.ctx > model.context_length())
    throw ValueError("[serve] --ctx must be in [1, " + std::to_string(model.context_length()) + "] (" +
                     model.info().context_key + "), got " + std::to_string(o.ctx));
  ctx_ = o.ctx ? o.ctx : model.context_length();
  if (model.has_row_decode()) {
    cache_ = model.new_row_cache(max_batch_, ctx_);
    rows_ = !cache_.ring;  // a sliding-window ring keeps one position per slot, not one sequence per row
    if (!rows_) cache_ = KvCache{};
  }
  slots_.resize(size_t(max_batch_));
  pos_.assign(size_t(max_batch_), 0);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

std::shared_ptr<Job> Scheduler::submit(JobSpec spec) {
  const int64_t P = int64_t(spec.prompt.size()), V = model_.vocab_size();
  if (P == 0) throw bad_request("the prompt is empty", "prompt");
  for (size_t i = 0; i < spec.prompt.size(); ++i)
    if (int64_t(spec.prompt[i]) >= V)
      throw bad_request("prompt token " + std::to_string(spec.prompt[i]) + " at position " + std::to_string(i) +
                            " is out of range for the vocabulary of " + std::to_string(V),
                        "prompt");
  if (P + spec.max_tokens > ctx_)
    throw ApiError(400, "invalid_request_error",
                   "this model's context is " + std::to_string(ctx_) + " tokens, but " + std::to_string(P) +
                       " prompt tokens + " + std::to_string(spec.max_tokens) + " max_tokens were requested",
                   "max_tokens", "context_length_exceeded");
  auto job = std::make_shared<Job>(std::move(spec));
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) throw ApiError(503, "server_error", "the server is shutting down", {}, "shutting_down");
    if (int64_t(waiting_.size()) >= queue_cap_ + (max_batch_ - busy_))
      throw ApiError(503, "server_error",
                     "the server is busy: " + std::to_string(busy_) + " sequences are running and " +
                         std::to_string(waiting_.size()) + " requests waiting (--queue " + std::to_string(queue_cap_) +
                         "); retry later",
                     {}, "queue_full");
    waiting_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

void Scheduler::shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::publish_queue() {
  int64_t waiting, running = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    waiting = int64_t(waiting_.size());
  }
  for (const auto& s : slots_) running += s ? 1 : 0;
  if (metrics_) metrics_->set_queue(waiting, running);
}

void Scheduler::loop() {
  for (;;) {
    std::vector<std::pair<std::shared_ptr<Job>, int64_t>> admits;
    {
      std::unique_lock<std::mutex> l(mu_);
      auto running = [&] { return std::any_of(slots_.begin(), slots_.end(), [](auto& s) { return bool(s); }); };
      cv_.wait(l, [&] { return stopping_ || !waiting_.empty() || running(); });
      // A waiting request whose client left gives its place in the queue back.
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (!(*it)->cancelled()) {
          ++it;
          continue;
        }
        (*it)->finish("cancelled");
        it = waiting_.erase(it);
      }
      for (int64_t r = 0; r < max_batch_ && !waiting_.empty(); ++r) {
        if (slots_[size_t(r)]) continue;
        std::shared_ptr<Job> job = waiting_.front();
        waiting_.pop_front();
        slots_[size_t(r)] = job;
        ++busy_;
        admits.emplace_back(job, r);
      }
      if (stopping_ && waiting_.empty() && admits.empty() && !running()) break;
    }
    for (auto& [job, r] : admits) admit(job, r);
    step();
    publish_queue();
  }
  publish_queue();
}

void Scheduler::admit(const std::shared_ptr<Job>& job, int64_t row) {
  const std::vector<uint32_t>& p = job->spec().prompt;
  const int64_t P = int64_t(p.size());
  if (metrics_) metrics_->tokens(P, 0);
  if (job->spec().max_tokens == 0) return release(row, "length");
  try {
    const Tensor ids = Tensor::from_vector(p, {1, P});
    Tensor logits;
    if (rows_) {
      logits = model_.prefill_row(ids, cache_, row);
    } else {
      job->own_ = model_.new_cache(1, std::min(ctx_, P + job->spec().max_tokens));
      logits = model_.forward_cached(ids, job->own_);
    }
    pos_[size_t(row)] = P;
    SampleOptions so = job->spec().sample;
    so.step = 0;
    deliver(row, sample_rows(logits, {&so})[0]);
  } catch (const std::exception& e) {
    release(row, "error", e.what());
  }
}

void Scheduler::step() {
  std::vector<int64_t> active;
  for (int64_t r = 0; r < max_batch_; ++r) {
    if (!slots_[size_t(r)]) continue;
    if (slots_[size_t(r)]->cancelled()) release(r, "cancelled");  // a client that left frees its row now
    else active.push_back(r);
  }
  if (active.empty()) return;
  std::vector<SampleOptions> so(active.size());
  for (size_t i = 0; i < active.size(); ++i) {
    const Job& j = *slots_[size_t(active[i])];
    so[i] = j.spec().sample;
    so[i].step = uint64_t(j.produced_);
  }
  std::vector<uint32_t> next(active.size());
  try {
    if (rows_) {
      // Rows 0 .. highest busy row; a free row in between steps token 0 at position 0 (its output is dropped).
      const int64_t n = active.back() + 1;
      std::vector<uint32_t> ids(size_t(n), 0);
      std::vector<int64_t> pos(size_t(n), 0);
      std::vector<const SampleOptions*> opts(size_t(n), nullptr);
      for (size_t i = 0; i < active.size(); ++i) {
        const int64_t r = active[i];
        ids[size_t(r)] = slots_[size_t(r)]->last_;
        pos[size_t(r)] = pos_[size_t(r)];
        opts[size_t(r)] = &so[i];
      }
      const std::vector<uint32_t> got =
          sample_rows(model_.decode_rows(Tensor::from_vector(ids, {n, 1}), cache_, pos), opts);
      for (size_t i = 0; i < active.size(); ++i) next[i] = got[size_t(active[i])];
    } else {
      for (size_t i = 0; i < active.size(); ++i) {
        Job& j = *slots_[size_t(active[i])];
        const Tensor logits = model_.forward_cached(Tensor::from_vector(std::vector<uint32_t>{j.last_}, {1, 1}), j.own_);
        next[i] = sample_rows(logits, {&so[i]})[0];
      }
    }
  } catch (const std::exception& e) {
    for (int64_t r : active) release(r, "error", e.what());
    return;
  }
  if (metrics_) metrics_->step(int64_t(active.size()));
  for (size_t i = 0; i < active.size(); ++i) {
    ++pos_[size_t(active[i])];
    deliver(active[i], next[i]);
  }
}

void Scheduler::deliver(int64_t row, uint32_t id) {
  Job& j = *slots_[size_t(row)];
  if (id == kSampleNoToken) return release(row, "error", non_finite_logits_message(j.produced_));
  const auto now = std::chrono::steady_clock::now();
  if (metrics_) {
    metrics_->tokens(0, 1);
    if (j.produced_ == 0) metrics_->first_token(seconds(now - j.submitted_));
    else metrics_->inter_token(seconds(now - j.last_token_));
  }
  j.last_token_ = now;
  j.last_ = id;
  ++j.produced_;
  j.push(id);
  const auto& stops = j.spec().stop_ids;
  if (std::find(stops.begin(), stops.end(), id) != stops.end()) release(row, "stop");
  else if (j.produced_ >= j.spec().max_tokens) release(row, "length");
}

void Scheduler::release(int64_t row, const std::string& reason, const std::string& error) {
  std::shared_ptr<Job> j = std::move(slots_[size_t(row)]);
  slots_[size_t(row)] = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    --busy_;
  }
  j->own_ = KvCache{};
  if (metrics_) metrics_->finished(seconds(std::chrono::steady_clock::now() - j->submitted_));
  j->finish(reason, error);
}

}  // namespace forge::serve
