// Token-by-token generation: prefill the prompt into the KV cache, then one
// step per token whose sampled id stays on the device and feeds the next
// step's embedding; only the id is read back, and on WebGPU the next step is
// submitted before that read waits, so the device always has work queued.
#include <chrono>
#include <memory>
#include <optional>

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
Tensor last_logits(const Gpt2& model, const std::vector<uint32_t>& seq) {
  const int64_t T = int64_t(seq.size()), V = model.config().vocab_size;
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

}  // namespace

std::vector<uint32_t> gpt2_generate(const Gpt2& model, const std::vector<uint32_t>& prompt,
                                    const Gpt2GenerateOptions& o, const std::function<void(uint32_t)>& on_token,
                                    Gpt2GenerateStats* stats) {
  const Gpt2Config& c = model.config();
  const int64_t P = int64_t(prompt.size());
  if (P == 0) throw ValueError("[gpt2] generate needs a prompt of at least one token");
  if (o.max_new_tokens < 0) throw ValueError("[gpt2] max_new_tokens must be >= 0, got " + S(o.max_new_tokens));
  for (size_t i = 0; i < prompt.size(); ++i)
    if (int64_t(prompt[i]) >= c.vocab_size)
      throw ValueError("[gpt2] prompt id " + S(prompt[i]) + " at position " + S(int64_t(i)) +
                       " is out of range for vocab size " + S(c.vocab_size));
  if (P + o.max_new_tokens > c.n_positions)
    throw ValueError("[gpt2] prompt of " + S(P) + " tokens + " + S(o.max_new_tokens) +
                     " new tokens exceeds the context length n_positions = " + S(c.n_positions));
  Gpt2GenerateStats st;
  std::vector<uint32_t> out;
  if (o.max_new_tokens == 0) {
    if (stats) *stats = st;
    return out;
  }
  SampleOptions so = o.sample;
  auto t0 = std::chrono::steady_clock::now();

  if (!o.use_cache) {
    std::vector<uint32_t> seq = prompt;
    for (int64_t i = 0; i < o.max_new_tokens; ++i) {
      so.step = uint64_t(i);
      auto ts = std::chrono::steady_clock::now();
      uint32_t id = sample(last_logits(model, seq), so).to_vector<uint32_t>()[0];
      (i == 0 ? st.prefill_s : st.decode_s) += seconds_since(ts);
      (i == 0 ? st.prefill_tokens : st.decode_tokens) += i == 0 ? P : 1;
      out.push_back(id);
      seq.push_back(id);
      if (on_token) on_token(id);
      if (o.eos && id == *o.eos) break;
    }
    if (stats) *stats = st;
    return out;
  }

  Gpt2Cache cache = model.new_cache(1);
  so.step = 0;
  Tensor next = sample(model.forward_cached(Tensor::from_vector(prompt, {1, P}), cache), so);  // u32 [1] on dev
  uint32_t id = next.to_vector<uint32_t>()[0];
  st.prefill_s = seconds_since(t0);
  st.prefill_tokens = P;
  out.push_back(id);
  if (on_token) on_token(id);
  auto td = std::chrono::steady_clock::now();
  // Token i from token i - 1, which stays on the device.
  auto step = [&](int64_t i, const Tensor& prev) {
    so.step = uint64_t(i);
    return sample(model.forward_cached(prev.reshape({1, 1}), cache), so);  // u32 [1]
  };
  // One step ahead: token i + 1 is recorded and submitted before token i is
  // read, so the device computes it while the host waits and then records
  // the next; a step after EOS is computed and dropped.
  std::optional<IdRead> pending;
  if (o.max_new_tokens > 1 && !(o.eos && id == *o.eos)) {
    next = step(1, next);
    pending.emplace(next);
  }
  for (int64_t i = 1; pending; ++i) {
    Tensor ahead;
    std::optional<IdRead> ahead_read;
    if (i + 1 < o.max_new_tokens) {
      ahead = step(i + 1, next);
      ahead_read.emplace(ahead);
    }
    id = pending->get();
    ++st.decode_tokens;
    out.push_back(id);
    if (on_token) on_token(id);
    if (o.eos && id == *o.eos) break;
    pending = std::move(ahead_read);
    next = ahead;
  }
  st.decode_s = seconds_since(td);
  if (stats) *stats = st;
  return out;
}

}  // namespace forge
