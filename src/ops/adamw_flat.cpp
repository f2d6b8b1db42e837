// adamw_flat: AdamW over flat parameter buffers (validation, the clip factor
// on the CPU, dispatch).
#include <algorithm>
#include <cmath>

#include "cpu/nn_kernels.h"
#include "forge/ops/train.h"
#include "ops/check.h"
#include "webgpu/nn_kernels.h"

namespace forge {

namespace {

// Sorted, disjoint, within [0, n), decay 0 or 1 (CPU segment tables only:
// reading a device table back would be a sync point).
void check_segments(const Tensor& segments, int64_t n) {
  const uint32_t* s = segments.data<uint32_t>();
  uint64_t prev_end = 0;
  for (int64_t r = 0; r < segments.dim(0); ++r) {
    const uint32_t b = s[3 * r], e = s[3 * r + 1], d = s[3 * r + 2];
    if (b < prev_end || e < b || int64_t(e) > n || d > 1)
      throw ValueError("[adamw_flat] segment " + std::to_string(r) + " (" + std::to_string(b) + ", " +
                       std::to_string(e) + ", " + std::to_string(d) +
                       ") is not sorted, disjoint, within [0, " + std::to_string(n) + ") with decay 0 or 1");
    prev_end = e;
  }
}

}  // namespace

void adamw_flat(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const Tensor& segments, const AdamParams& p,
                const Tensor& norm_sq, float max_norm) {
  const char* op = "adamw_flat";
  check::same_device(op, {&w, &g, &m, &v, &segments});
  for (auto [name, t] : {std::pair<const char*, const Tensor*>{"w", &w}, {"g", &g}, {"m", &m}, {"v", &v}}) {
    check::dtype(op, name, *t, DType::F32);
    check::rank(op, name, *t, 1, 1);
  }
  if (g.numel() != w.numel() || m.numel() != w.numel() || v.numel() != w.numel())
    throw ShapeError("[adamw_flat] sizes differ: " + check::operands({{"w", &w}, {"g", &g}, {"m", &m}, {"v", &v}}));
  check::dtype(op, "segments", segments, DType::U32);
  if (segments.rank() != 2 || segments.dim(1) != 3 || segments.dim(0) < 1)
    throw ShapeError("[adamw_flat] segments must be [S, 3] with S >= 1, got " + segments.describe());
  if (w.numel() >= (int64_t(1) << 32))
    throw ShapeError("[adamw_flat] " + w.describe() + " holds 2^32 elements or more; split it into pages");
  if (max_norm < 0 || !std::isfinite(max_norm))
    throw ValueError("[adamw_flat] max_norm must be a non-negative number, got " + std::to_string(max_norm));
  if (max_norm > 0) {
    if (!norm_sq.defined()) throw ValueError("[adamw_flat] clipping (max_norm > 0) needs norm_sq");
    check::same_device(op, {&w, &norm_sq});
    check::dtype(op, "norm_sq", norm_sq, DType::F32);
    if (norm_sq.numel() != 1) throw ShapeError("[adamw_flat] norm_sq must hold one value, got " + norm_sq.describe());
  }
  const AdamWPlan plan =
      adamw_plan(op, p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.step, "flat buffer " + w.describe());
  if (w.numel() == 0) return;
  if (w.device().is_cpu()) {
    check_segments(segments, w.numel());
    float clip = 1.0f;  // clip_grad_by_norm's factor, in f32 as its kernels compute it
    if (max_norm > 0) clip = std::min(1.0f, max_norm / (std::sqrt(norm_sq.data<float>()[0]) + 1e-6f));
    cpu::adamw_flat(w, g, m, v, segments, plan, clip);
  } else {
    webgpu::adamw_flat(w, g, m, v, segments, plan, max_norm > 0 ? norm_sq : Tensor(), max_norm);
  }
}

}  // namespace forge
