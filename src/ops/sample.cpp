// sample: validation and dispatch (kernels: src/cpu/sample.cpp,
// src/webgpu/sample.cpp).
#include <cmath>

#include "cpu/philox.h"
#include "forge/ops/sample.h"
#include "cpu/sample_kernel.h"
#include "ops/check.h"
#include "webgpu/sample_kernel.h"

namespace forge {

Tensor sample(const Tensor& logits, const SampleOptions& o) {
  const char* op = "sample";
  check::same_device(op, {&logits});
  check::dtype(op, "logits", logits, DType::F32);
  check::rank(op, "logits", logits, 1, 2);
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature))
    throw ValueError("[sample] temperature must be finite and >= 0, got " + std::to_string(o.temperature));
  if (o.top_k < 0) throw ValueError("[sample] top_k must be >= 0, got " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    throw ValueError("[sample] top_p must lie in (0, 1], got " + std::to_string(o.top_p));
  if (!(o.min_p >= 0.0f && o.min_p <= 1.0f))
    throw ValueError("[sample] min_p must lie in [0, 1], got " + std::to_string(o.min_p));
  if (!(o.repeat_penalty > 0.0f) || !std::isfinite(o.repeat_penalty))
    throw ValueError("[sample] repeat_penalty must be finite and > 0, got " + std::to_string(o.repeat_penalty));
  SamplePlan p;
  p.vocab = logits.dim(-1);
  p.rows = logits.rank() == 2 ? logits.dim(0) : 1;
  if (p.vocab < 1 || p.vocab >= (int64_t(1) << 31))
    throw ShapeError("[sample] vocab of logits " + logits.describe() + " must lie in [1, 2^31)");
  p.greedy = o.temperature == 0.0f;
  p.top_k = o.top_k > 0 && o.top_k < p.vocab ? uint32_t(o.top_k) : 0u;
  p.inv_temp = p.greedy ? 1.0f : float(1.0 / double(o.temperature));
  if (!std::isfinite(p.inv_temp))
    throw ValueError("[sample] temperature " + std::to_string(o.temperature) + " is too small (1 / t overflows f32)");
  p.top_p = o.top_p;
  p.k0 = uint32_t(o.seed);
  p.k1 = uint32_t(o.seed >> 32);
  p.step = uint32_t(o.step);
  p.min_p = o.min_p;
  while ((int64_t(1) << p.index_bits) <= p.vocab) ++p.index_bits;
  Tensor out = Tensor::empty({p.rows}, DType::U32, logits.device());
  if (p.rows == 0) return out;
  if (logits.device().is_cpu()) cpu::sample(logits, p, out);
  else webgpu::sample(logits, p, out);
  return out;
}

Tensor sample(const Tensor& logits, const SampleOptions& o, const Tensor& recent) {
  const char* op = "sample";
  check::same_device(op, {&logits, &recent});
  check::dtype(op, "logits", logits, DType::F32);
  check::dtype(op, "recent", recent, DType::U32);
  check::rank(op, "logits", logits, 1, 2);
  check::rank(op, "recent", recent, 1, 2);
  PenaltyPlan p;
  p.rows = logits.rank() == 2 ? logits.dim(0) : 1;
  p.vocab = logits.dim(-1);
  p.window = recent.dim(-1);
  const int64_t recent_rows = recent.rank() == 2 ? recent.dim(0) : 1;
  if (recent_rows != p.rows)
    throw ShapeError("[sample] recent " + recent.describe() + " needs one row per row of logits " + logits.describe());
  if (o.repeat_penalty == 1.0f || p.window == 0 || p.rows == 0 || p.vocab == 0) return sample(logits, o);
  if (!(o.repeat_penalty > 0.0f) || !std::isfinite(o.repeat_penalty))
    throw ValueError("[sample] repeat_penalty must be finite and > 0, got " + std::to_string(o.repeat_penalty));
  p.up = o.repeat_penalty;
  p.down = float(1.0 / double(o.repeat_penalty));
  if (!std::isfinite(p.down))
    throw ValueError("[sample] repeat_penalty " + std::to_string(o.repeat_penalty) + " is too small (1 / r overflows f32)");
  Tensor penalized = Tensor::empty(logits.shape(), DType::F32, logits.device());
  if (logits.device().is_cpu()) cpu::repeat_penalty(logits, recent, p, penalized);
  else webgpu::repeat_penalty(logits, recent, p, penalized);
  return sample(penalized, o);
}

float sample_uniform(uint64_t seed, uint64_t step, uint32_t row) {
  uint32_t w = cpu::philox_word0(uint32_t(step), row, uint32_t(seed), uint32_t(seed >> 32));
  return float(w >> 8) * (1.0f / 16777216.0f);
}

}  // namespace forge
