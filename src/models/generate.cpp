// The one generation loop (forge/generate.h) for every CausalLM, and GPT-2's
// wrapper over it.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "forge/generate.h"
#include "forge/gpt2.h"
#include "forge/ops.h"
#include "gpu/runtime.h"

namespace forge {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The last position's logits [1, V] of the whole sequence, without a cache.
Tensor last_logits(const CausalLM& model, const std::vector<uint32_t>& seq) {
  const int64_t T = int64_t(seq.size()), V = model.vocab_size();
  Tensor logits = model.forward(Tensor::from_vector(seq, {1, T})).reshape({T, V});
  // Row T - 1 gathered as an embedding row (a slice there need not be aligned for a binding).
  return embedding(Tensor::from_vector(std::vector<uint32_t>{uint32_t(T - 1)}, {1}), logits);
}

// The id held by a u32 [1] tensor. On WebGPU the read back starts at
// construction and waits only in get().
class IdRead {
 public:
  explicit IdRead(const Tensor& id) {
    if (id.device().is_webgpu()) pending_ = id.device().runtime().start_download(id.buffer(), id.byte_offset(), 4);
    else value_ = id.to_vector<uint32_t>()[0];
  }
  uint32_t get() {
    if (pending_) {
      pending_->finish(&value_);
      pending_.reset();
    }
    return value_;
  }

 private:
  std::unique_ptr<gpu::PendingDownload> pending_;
  uint32_t value_ = 0;
};

bool stops(const GenerateOptions& o, uint32_t id) {
  for (uint32_t s : o.stop_ids)
    if (s == id) return true;
  return false;
}

// The ids the repeat penalty looks back on: u32 [N] on the device, a ring in
// which position p's id lives in slot p % N, written by a recorded copy so
// the decode loop never waits for it. Empty slots hold 0xFFFFFFFF (past any
// vocabulary: sample skips them).
class RecentIds {
 public:
  RecentIds(int64_t n, const std::vector<uint32_t>& prompt, const Device& dev) : n_(n) {
    std::vector<uint32_t> ring(size_t(n), 0xFFFFFFFFu);
    const int64_t P = int64_t(prompt.size());
    for (int64_t p = std::max<int64_t>(0, P - n); p < P; ++p) ring[size_t(p % n)] = prompt[size_t(p)];
    ring_ = Tensor::from_vector(ring, {n}).to(dev);
  }
  const Tensor& ids() const { return ring_; }
  void put(const Tensor& id, int64_t pos) { copy_tensor(id, ring_, pos % n_); }

 private:
  int64_t n_;
  Tensor ring_;  // u32 [N]
};

// The last n ids of seq (all when shorter), for the uncached loop.
Tensor last_ids(const std::vector<uint32_t>& seq, int64_t n, const Device& dev) {
  const size_t k = std::min(seq.size(), size_t(n));
  return Tensor::from_vector(std::vector<uint32_t>(seq.end() - std::ptrdiff_t(k), seq.end()), {int64_t(k)}).to(dev);
}

}  // namespace

std::string non_finite_logits_message(int64_t index) {
  return "the logits of generated token " + std::to_string(index) +
         " are not finite (NaN or +inf): the model's weights hold values that are not finite, or its forward "
         "pass overflowed";
}

std::vector<uint32_t> generate(const CausalLM& model, const std::vector<uint32_t>& prompt, const GenerateOptions& o,
                               const TokenCallback& on_token_cb, GenerateStats* stats) {
  const std::string who = "[" + model.info().family + "]";
  const int64_t P = int64_t(prompt.size()), V = model.vocab_size(), ctx = model.context_length();
  if (P == 0) throw ValueError(who + " generate needs a prompt of at least one token");
  if (o.max_new_tokens < 0) throw ValueError(who + " max_new_tokens must be >= 0, got " + S(o.max_new_tokens));
  if (o.repeat_last_n < -1) throw ValueError(who + " repeat_last_n must be >= -1, got " + S(o.repeat_last_n));
  for (size_t i = 0; i < prompt.size(); ++i)
    if (int64_t(prompt[i]) >= V)
      throw ValueError(who + " prompt id " + S(prompt[i]) + " at position " + S(int64_t(i)) +
                       " is out of range for vocab size " + S(V));
  const int64_t past = o.cache ? o.cache->len : 0;
  const int64_t keep = std::clamp<int64_t>(o.keep, 0, P);
  if (o.context_shift) {
    if (o.cache) throw ValueError(who + " context_shift needs a fresh cache (the ids of a given cache are not known)");
    if (!o.use_cache) throw ValueError(who + " context_shift needs use_cache");
    if (P >= ctx)
      throw ValueError(who + " prompt of " + S(P) + " tokens fills the context length " + model.info().context_key +
                       " = " + S(ctx));
    if (ctx - keep < 2)
      throw ValueError(who + " keep = " + S(keep) + " leaves nothing to drop in the context length " + S(ctx));
  } else if (past + P + o.max_new_tokens > ctx) {
    throw ValueError(who + " " + (past ? S(past) + " cached + " : std::string()) + "prompt of " + S(P) +
                     " tokens + " + S(o.max_new_tokens) + " new tokens exceeds the context length " + model.info().context_key + " = " + S(ctx));
  }
  if (o.cache && !o.use_cache) throw ValueError(who + " generate was given a cache with use_cache off");
  GenerateStats st;
  std::vector<uint32_t> out;
  if (o.max_new_tokens == 0) {
    if (stats) *stats = st;
    return out;
  }
  // A row of logits with a NaN or +inf has no token: an error, not an id.
  auto check_id = [&](uint32_t id, size_t index) {
    if (id == kSampleNoToken) throw ValueError(who + " " + non_finite_logits_message(int64_t(index)));
  };
  // Records the id; false when generation ends with it.
  auto accept = [&](uint32_t id) {
    check_id(id, out.size());
    out.push_back(id);
    const bool more = on_token_cb ? on_token_cb(id) : true;
    return more && !stops(o, id);
  };
  SampleOptions so = o.sample;
  const int64_t window = o.sample.repeat_penalty == 1.0f ? 0 : o.repeat_last_n < 0 ? ctx : o.repeat_last_n;
  auto t0 = std::chrono::steady_clock::now();

  if (!o.use_cache) {
    std::vector<uint32_t> seq = prompt;
    for (int64_t i = 0; i < o.max_new_tokens; ++i) {
      so.step = uint64_t(i);
      auto ts = std::chrono::steady_clock::now();
      Tensor logits = last_logits(model, seq);
      Tensor next = window ? sample(logits, so, last_ids(seq, window, logits.device())) : sample(logits, so);
      uint32_t id = next.to_vector<uint32_t>()[0];
      (i == 0 ? st.prefill_s : st.decode_s) += seconds_since(ts);
      (i == 0 ? st.prefill_tokens : st.decode_tokens) += i == 0 ? P : 1;
      seq.push_back(id);
      if (!accept(id)) break;
    }
    if (stats) *stats = st;
    return out;
  }

  KvCache own;
  if (!o.cache) own = model.new_cache(1, std::min(ctx, P + o.max_new_tokens));
  KvCache& cache = o.cache ? *o.cache : own;
  // The penalty's window: the cache's ids (as given), the prompt, then each
  // new id: token i at position C + P + i.
  std::optional<RecentIds> recent;
  const int64_t C = o.cache ? int64_t(o.cached_ids.size()) : 0;
  if (window) {
    std::vector<uint32_t> context = o.cache ? o.cached_ids : std::vector<uint32_t>{};
    context.insert(context.end(), prompt.begin(), prompt.end());
    recent.emplace(window, context, model.device());
  }
  auto draw = [&](int64_t i, const Tensor& logits) {
    so.step = uint64_t(i);
    if (!recent) return sample(logits, so);
    Tensor id = sample(logits, so, recent->ids());  // u32 [1]
    recent->put(id, C + P + i);
    return id;
  };
  Tensor next = draw(0, model.forward_cached(Tensor::from_vector(prompt, {1, P}), cache));  // u32 [1] on dev
  uint32_t id = next.to_vector<uint32_t>()[0];
  st.prefill_s = seconds_since(t0);
  st.prefill_tokens = P;
  bool more = accept(id);
  auto td = std::chrono::steady_clock::now();
  // Token i from token i - 1, which stays on the device. (On the CPU it is
  // known already: a missing token is named here, not by the embedding.)
  auto step = [&](int64_t i, const Tensor& prev) {
    if (prev.device().is_cpu()) check_id(prev.data<uint32_t>()[0], size_t(i - 1));
    return draw(i, model.forward_cached(prev.reshape({1, 1}), cache));
  };
  // The ids in the cache, for a context shift: `window_ids`, then out[fed..]
  // but the newest id (the next step feeds that one).
  std::vector<uint32_t> window_ids = o.context_shift ? prompt : std::vector<uint32_t>{};
  size_t fed = 0;
  const int64_t limit = cache.ring ? ctx : std::min(ctx, cache.capacity);
  auto full = [&] { return o.context_shift && cache.len >= limit; };
  // Token i when the cache is full: keep the first `keep` ids, drop half of
  // the rest, and prefill what remains followed by token i - 1 (out.back(),
  // read already) from position 0.
  auto shift_step = [&](int64_t i) {
    std::vector<uint32_t> seq = window_ids;
    seq.insert(seq.end(), out.begin() + std::ptrdiff_t(fed), out.end());
    const int64_t drop = (cache.len - keep) / 2;
    seq.erase(seq.begin() + keep, seq.begin() + keep + drop);
    window_ids = seq;
    fed = out.size();
    cache.len = 0;
    return draw(i, model.forward_cached(Tensor::from_vector(seq, {1, int64_t(seq.size())}), cache));
  };
  // One step ahead: token i + 1 is recorded and submitted before token i is
  // read, so the device computes it while the host waits and then records
  // the next. A step after the last accepted token is computed and dropped;
  // its position is taken back from the cache (its keys are overwritten by
  // whatever comes next). A context shift needs token i on the host, so that
  // step waits for the read.
  std::optional<IdRead> pending;
  if (o.max_new_tokens > 1 && more) {
    next = full() ? shift_step(1) : step(1, next);
    pending.emplace(next);
  }
  for (int64_t i = 1; pending; ++i) {
    Tensor ahead;
    std::optional<IdRead> ahead_read;
    const bool shift = i + 1 < o.max_new_tokens && full();
    if (i + 1 < o.max_new_tokens && !shift) {
      ahead = step(i + 1, next);
      ahead_read.emplace(ahead);
    }
    const auto tw = std::chrono::steady_clock::now();
    id = pending->get();
    st.decode_wait_s += seconds_since(tw);
    ++st.decode_tokens;
    if (!accept(id)) {
      if (ahead_read) cache.len -= 1;  // the dropped step's position
      break;
    }
    if (shift) {
      ahead = shift_step(i + 1);
      ahead_read.emplace(ahead);
    }
    pending = std::move(ahead_read);
    next = ahead;
  }
  st.decode_s = seconds_since(td);
  if (stats) *stats = st;
  return out;
}

std::vector<uint32_t> gpt2_generate(const Gpt2& model, const std::vector<uint32_t>& prompt,
                                    const Gpt2GenerateOptions& g, const std::function<void(uint32_t)>& on_token,
                                    Gpt2GenerateStats* stats) {
  GenerateOptions o;
  o.max_new_tokens = g.max_new_tokens;
  o.sample = g.sample;
  o.use_cache = g.use_cache;
  if (g.eos) o.stop_ids = {*g.eos};
  return generate(model, prompt, o,
                  [&](uint32_t id) {
                    if (on_token) on_token(id);
                    return true;
                  },
                  stats);
}

}  // namespace forge
