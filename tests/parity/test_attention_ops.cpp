// Flash attention on the CPU and on WebGPU against a naive double-precision
// attention written here, over GQA ratios 1, 2, 4 and MQA, causal or not,
// KV-cache offsets, sliding windows, masks broadcast along each dim, dropout,
// head_dim 6..128 and sequences of 1 to 1000; then the WebGPU
// backward against the CPU backward (itself checked against finite
// differences in tests/unit/test_attention_grad.cpp); the tiled prefill
// kernel again at the smaller tilings of devices with less workgroup
// storage; then validation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include "parity/parity.h"
#include "webgpu/attention_kernels.h"
#include "webgpu/flash_tiling.h"

namespace forge::testing {
namespace {

struct Case {
  std::string name;
  int64_t batch, seq_q, seq_k, heads, kv_heads, dim;
  AttentionOptions o;
  Shape mask;  // empty = no mask; else [batch|1, heads|1, seq_q|1, seq_k|1]
};

Case make(std::string name, int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t hkv, int64_t d,
          AttentionOptions o = {}, Shape mask = {}) {
  return {std::move(name), b, sq, sk, h, hkv, d, o, std::move(mask)};
}

AttentionOptions opts(bool causal, int64_t offset = 0, int64_t window = 0, float p = 0.0f, uint64_t seed = 0) {
  AttentionOptions o;
  o.causal = causal;
  o.kv_offset = offset;
  o.window = window;
  o.dropout_p = p;
  o.dropout_seed = seed;
  return o;
}

std::vector<Case> cases() {
  return {
      make("mha d16", 2, 7, 7, 2, 2, 16),
      make("gqa2 causal d32 prefill", 1, 129, 129, 4, 2, 32, opts(true)),
      make("gqa4 d64", 1, 129, 129, 8, 2, 64),
      make("mqa causal offset d80", 2, 7, 20, 3, 1, 80, opts(true, 13)),
      make("decode gqa2 d128", 2, 1, 129, 4, 2, 128, opts(true, 128)),
      make("decode mqa d64 no cache", 1, 1, 1, 4, 1, 64, opts(true)),
      // Splits of several 64-key tiles: a long cache, and rows enough for one split.
      make("decode long cache d128", 1, 1, 5000, 2, 1, 128, opts(true, 4999)),
      make("decode 8 queries two tiles per split d128", 1, 8, 200, 32, 8, 128, opts(true, 192)),
      make("prefill d128 causal offset", 1, 129, 140, 2, 1, 128, opts(true, 11)),
      make("window causal", 1, 129, 129, 2, 1, 32, opts(true, 0, 16)),
      make("prefill d80 gqa2 window offset", 1, 129, 150, 2, 1, 80, opts(true, 21, 40)),
      make("prefill d16 two blocks non-causal", 2, 129, 70, 2, 2, 16),
      make("window non-causal", 2, 7, 7, 2, 2, 16, opts(false, 0, 3)),
      make("window decode", 1, 1, 129, 2, 2, 64, opts(true, 128, 50)),
      make("mask full", 2, 7, 9, 4, 2, 16, {}, {2, 4, 7, 9}),
      make("mask b-broadcast", 2, 129, 129, 2, 1, 32, opts(true), {1, 2, 129, 129}),
      make("mask h-broadcast", 2, 7, 9, 4, 1, 16, {}, {2, 1, 7, 9}),
      make("mask q-broadcast", 2, 7, 9, 2, 2, 16, {}, {2, 2, 1, 9}),
      make("mask k-broadcast", 1, 7, 9, 2, 2, 16, {}, {1, 2, 7, 1}),
      make("mask all-broadcast decode", 2, 1, 129, 4, 2, 32, opts(true, 128), {1, 1, 1, 129}),
      make("dropout prefill", 1, 129, 129, 4, 2, 32, opts(true, 0, 0, 0.25f, 7)),
      // A head a group (GPT-2's training): the products write grad_k and grad_v directly.
      make("mha causal dropout prefill d64", 2, 129, 129, 3, 3, 64, opts(true, 0, 0, 0.1f, 9)),
      make("dropout decode", 2, 1, 129, 2, 1, 64, opts(false, 0, 0, 0.5f, 99)),
      make("dropout mask window", 1, 7, 7, 2, 1, 16, opts(true, 0, 4, 0.1f, 3), {1, 2, 7, 7}),
      // Prefill through the tiled kernel: query counts that are not a multiple
      // of its blocks, key counts not a multiple of its tiles.
      make("tiled d64 gqa2 causal offset", 1, 100, 117, 4, 2, 64, opts(true, 17)),
      make("tiled d128 mqa window mask", 1, 77, 77, 3, 1, 128, opts(true, 0, 20), {1, 3, 77, 77}),
      make("tiled d40 gqa2 dropout offset", 2, 70, 90, 4, 2, 40, opts(true, 20, 0, 0.2f, 5)),
      make("tiled d36 window non-causal offset", 1, 33, 60, 2, 2, 36, opts(false, 10, 8)),
      // The window starts past the last key for queries 12 on: those rows see
      // nothing, within one block of queries that sees some keys.
      make("window past the keys non-causal", 1, 20, 10, 2, 1, 16, opts(false, 0, 3)),
      // Every 5th query sees nothing (a k-broadcast mask row of -inf).
      make("tiled d64 fully masked rows", 1, 40, 50, 2, 2, 64, {}, {1, 2, 40, 1}),
      make("tiled d128 dropout mask non-causal", 1, 20, 70, 2, 1, 128, opts(false, 0, 0, 0.3f, 11), {1, 1, 20, 70}),
      // Not a multiple of 4: the one-query-per-invocation kernel; in decode,
      // keys read as scalars.
      make("prefill d6 fallback", 1, 20, 20, 2, 1, 6, opts(true, 0, 5)),
      make("decode d6 gqa2", 1, 1, 70, 4, 2, 6, opts(true, 69)),
  };
}

// Additive mask values in [-2, 2) with every 5th entry -inf (so that some
// rows of the broadcast masks are fully masked).
Tensor make_mask(const Shape& s, uint32_t seed) {
  std::vector<float> m = random_values(numel(s), seed, -2.0f, 2.0f);
  for (size_t e = 0; e < m.size(); e += 5) m[e] = -INFINITY;
  return Tensor::from_vector(m, s);
}

// Naive attention in double: out [B, Sq, H, D].
std::vector<float> reference(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask) {
  std::vector<float> pq = q.to_f32(), pk = k.to_f32(), pv = v.to_f32(), pm;
  if (mask) pm = mask->to_f32();
  std::vector<float> keep;
  if (c.o.dropout_p > 0) {
    Tensor ones = Tensor::from_vector(std::vector<float>(size_t(c.batch * c.heads * c.seq_q * c.seq_k), 1.0f),
                                      {c.batch, c.heads, c.seq_q, c.seq_k});
    keep = dropout(ones, c.o.dropout_p, c.o.dropout_seed).to_f32();
  }
  const int64_t D = c.dim, group = c.heads / c.kv_heads;
  const double scale = c.o.scale > 0 ? c.o.scale : 1.0 / std::sqrt(double(D));
  std::vector<float> out(size_t(numel({c.batch, c.seq_q, c.heads, D})));
  std::vector<double> s(size_t(c.seq_k));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.seq_q; ++i) {
        const int64_t pos = c.o.kv_offset + i, g = h / group;
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.seq_k; ++j) {
          double x = -INFINITY;
          if ((!c.o.causal || j <= pos) && (c.o.window == 0 || pos - j < c.o.window)) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += double(pq[size_t(((b * c.seq_q + i) * c.heads + h) * D + d)]) *
                     double(pk[size_t(((b * c.seq_k + j) * c.kv_heads + g) * D + d)]);
            x = scale * dot;
            if (mask) {
              const Shape& m = c.mask;
              int64_t idx = (((m[0] == 1 ? 0 : b) * m[1] + (m[1] == 1 ? 0 : h)) * m[2] + (m[2] == 1 ? 0 : i)) * m[3] +
                            (m[3] == 1 ? 0 : j);
              x += double(pm[size_t(idx)]);
            }
            if (!(x > -1e30)) x = -INFINITY;
          }
          s[size_t(j)] = x;
          mx = std::max(mx, x);
        }
        float* o = &out[size_t(((b * c.seq_q + i) * c.heads + h) * D)];
        if (mx == -INFINITY) continue;  // zeros
        double sum = 0;
        for (double x : s) sum += std::exp(x - mx);
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < c.seq_k; ++j) {
            double w = std::exp(s[size_t(j)] - mx) / sum;
            if (!keep.empty()) w *= double(keep[size_t(((b * c.heads + h) * c.seq_q + i) * c.seq_k + j)]);
            acc += w * double(pv[size_t(((b * c.seq_k + j) * c.kv_heads + g) * D + d)]);
          }
          o[d] = float(acc);
        }
      }
  return out;
}

struct Operands {
  Tensor q, k, v, mask, g;
  const Tensor* m() const { return mask.defined() ? &mask : nullptr; }
  Operands to(const Device& d) const {
    Operands r{q.to(d), k.to(d), v.to(d), Tensor(), g.to(d)};
    if (mask.defined()) r.mask = mask.to(d);
    return r;
  }
};

Operands operands(const Case& c) {
  Operands x;
  x.q = random_tensor({c.batch, c.seq_q, c.heads, c.dim}, 11);
  x.k = random_tensor({c.batch, c.seq_k, c.kv_heads, c.dim}, 12);
  x.v = random_tensor({c.batch, c.seq_k, c.kv_heads, c.dim}, 13);
  x.g = random_tensor({c.batch, c.seq_q, c.heads, c.dim}, 14);
  if (!c.mask.empty()) x.mask = make_mask(c.mask, 15);
  return x;
}

// Forward: |got - ref| <= 2e-5 + 1e-4 |ref| on the CPU, 1e-4 + 1e-3 |ref| on
// WebGPU (f32 accumulation over up to 1000 keys).
TEST(AttentionParity, ForwardAgainstDoubleReference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Operands cpu = operands(c);
    std::vector<float> want = reference(c, cpu.q, cpu.k, cpu.v, cpu.m());
    EXPECT_TRUE(all_close(flash_attention_v2(cpu.q, cpu.k, cpu.v, c.o, cpu.m()).to_f32(), want, 2e-5, 1e-4));
    Operands gpu = cpu.to(gpu_device());
    Tensor got = flash_attention_v2(gpu.q, gpu.k, gpu.v, c.o, gpu.m());
    ASSERT_TRUE(got.device().is_webgpu());
    EXPECT_TRUE(all_close(got.to_f32(), want, 1e-4, 1e-3));
  }
}

// WebGPU's out against the double reference and its lse against the CPU's.
void expect_gpu_forward_matches(const Case& c) {
  Operands cpu = operands(c);
  std::vector<float> want = reference(c, cpu.q, cpu.k, cpu.v, cpu.m());
  AttentionForward fc = flash_attention_v2_lse(cpu.q, cpu.k, cpu.v, c.o, cpu.m());
  Operands gpu = cpu.to(gpu_device());
  AttentionForward fg = flash_attention_v2_lse(gpu.q, gpu.k, gpu.v, c.o, gpu.m());
  EXPECT_TRUE(all_close(fg.out.to_f32(), want, 1e-4, 1e-3)) << "out";
  EXPECT_TRUE(all_close(fg.lse, fc.lse, 1e-4, 1e-4)) << "lse";
}

// The prefill cases again with the workgroup storage lowered to 32 and 16
// KiB, where the tiled kernel takes smaller tiles (or, for head_dim 128 at
// 16 KiB, gives way to the one-query-per-invocation kernel), with and
// without the next tile's K and V loaded ahead (FORGE_FLASH_PREFETCH); out
// and lse.
TEST(AttentionParity, ForwardAtSmallerTilings) {
  const uint32_t device_storage = gpu_device().runtime().limits().max_workgroup_storage;
  for (uint32_t storage : {32768u, 16384u}) {
    if (storage > device_storage) continue;
    LoweredWorkgroupStorage lowered(storage);
    // Both ways where the tiles leave V a space of its own (32 KiB); the
    // default at 16 KiB.
    for (const char* prefetch : {"0", "1"}) {
      if (storage < 32768u && *prefetch == '0') continue;
      ScopedEnv ahead("FORGE_FLASH_PREFETCH", prefetch);
      for (const Case& c : cases()) {
        if (c.seq_q <= 8) continue;  // decode kernel
        auto t = webgpu::flash_tiling(c.dim, storage, 256);
        SCOPED_TRACE(c.name + " at " + std::to_string(storage) + " bytes, prefetch " + prefetch + ": " +
                     (t ? "bq " + std::to_string(t->bq) + " bk " + std::to_string(t->bk) : std::string("untiled")));
        expect_gpu_forward_matches(c);
      }
    }
  }
}

// The decode kernel (flash_decode: the tile's max by wg_max) in both forms
// of the workgroup reductions the device offers: subgroups and the tree.
// (As a GPU's driver: a CPU driver's decode takes flash_decode_serial, below.)
TEST(AttentionParity, DecodeInEveryReduceForm) {
  ForcedCpuDriver gpu_driver(false);
  EXPECT_EQ(webgpu::attention_forward_kernel(1, 64, gpu_device().runtime()), "flash_decode");
  int decode_cases = 0;
  for (const ReduceForm& form : reduce_forms()) {
    ReduceFormScope form_scope(form);
    for (const Case& c : cases()) {
      if (c.seq_q > 8) continue;  // the prefill kernels
      ++decode_cases;
      SCOPED_TRACE(c.name + ", " + form.name);
      expect_gpu_forward_matches(c);
    }
  }
  EXPECT_GT(decode_cases, 0);
}

// A CPU driver's decode: flash_decode_serial, an invocation a row, over the
// decode cases (long caches, windows, masks, dropout among them).
TEST(AttentionParity, DecodeOnACpuDriverTakesTheRowKernel) {
  ForcedCpuDriver cpu_driver(true);
  EXPECT_EQ(webgpu::attention_forward_kernel(1, 64, gpu_device().runtime()), "flash_decode_serial");
  EXPECT_EQ(webgpu::attention_forward_kernel(8, 128, gpu_device().runtime()), "flash_decode_serial");
  int decode_cases = 0;
  for (const Case& c : cases()) {
    if (c.seq_q > 8) continue;
    ++decode_cases;
    SCOPED_TRACE(c.name);
    expect_gpu_forward_matches(c);
  }
  EXPECT_GT(decode_cases, 5);
}

// Backward: WebGPU against the CPU, |got - cpu| <= 5e-4 + 5e-3 |cpu|; lse
// from the forward of each backend, and (decode cases) recomputed.
TEST(AttentionParity, BackwardAgainstCpu) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Operands cpu = operands(c);
    AttentionForward fc = flash_attention_v2_lse(cpu.q, cpu.k, cpu.v, c.o, cpu.m());
    AttentionGrads want = flash_attention_v2_backward(cpu.q, cpu.k, cpu.v, fc.out, cpu.g, c.o, cpu.m(), &fc.lse);
    Operands gpu = cpu.to(gpu_device());
    AttentionForward fg = flash_attention_v2_lse(gpu.q, gpu.k, gpu.v, c.o, gpu.m());
    EXPECT_TRUE(all_close(fg.lse, fc.lse, 1e-4, 1e-4)) << "lse";
    const Tensor* lse = c.seq_q == 1 ? nullptr : &fg.lse;
    AttentionGrads got = flash_attention_v2_backward(gpu.q, gpu.k, gpu.v, fg.out, gpu.g, c.o, gpu.m(), lse);
    EXPECT_TRUE(all_close(got.grad_q, want.grad_q, 5e-4, 5e-3)) << "grad_q";
    EXPECT_TRUE(all_close(got.grad_k, want.grad_k, 5e-4, 5e-3)) << "grad_k";
    EXPECT_TRUE(all_close(got.grad_v, want.grad_v, 5e-4, 5e-3)) << "grad_v";
  }
}

// WebGPU backward against the CPU backward with the given lse.
void expect_backward_parity(const Case& c) {
  Operands cpu = operands(c);
  AttentionForward fc = flash_attention_v2_lse(cpu.q, cpu.k, cpu.v, c.o, cpu.m());
  AttentionGrads want = flash_attention_v2_backward(cpu.q, cpu.k, cpu.v, fc.out, cpu.g, c.o, cpu.m(), &fc.lse);
  Operands gpu = cpu.to(gpu_device());
  Tensor out = fc.out.to(gpu_device()), lse = fc.lse.to(gpu_device());
  AttentionGrads got = flash_attention_v2_backward(gpu.q, gpu.k, gpu.v, out, gpu.g, c.o, gpu.m(), &lse);
  EXPECT_TRUE(all_close(got.grad_q, want.grad_q, 5e-4, 5e-3)) << "grad_q";
  EXPECT_TRUE(all_close(got.grad_k, want.grad_k, 5e-4, 5e-3)) << "grad_k";
  EXPECT_TRUE(all_close(got.grad_v, want.grad_v, 5e-4, 5e-3)) << "grad_v";
}

// The backward again with the workgroup storage lowered to 32 and 16 KiB,
// where the tiled grad_k / grad_v kernel takes smaller tiles or gives way to
// the one-key-per-invocation kernel.
TEST(AttentionParity, BackwardAtSmallerTilings) {
  const uint32_t device_storage = gpu_device().runtime().limits().max_workgroup_storage;
  for (uint32_t storage : {32768u, 16384u}) {
    if (storage > device_storage) continue;
    LoweredWorkgroupStorage lowered(storage);
    for (const Case& c : cases()) {
      auto t = webgpu::flash_bwd_tiling(c.dim, storage, 256);
      SCOPED_TRACE(c.name + " at " + std::to_string(storage) + " bytes: " +
                   (t ? "bk " + std::to_string(t->bk) + " bq " + std::to_string(t->bq) : std::string("untiled")));
      expect_backward_parity(c);
    }
  }
}

// The scores kernel in 32x32 tiles (at 8 KiB of workgroup storage, where
// 64x64 tiles do not fit), over the cases that take it: causal (with GQA;
// with dropout) and not.
TEST(AttentionParity, BackwardWithSmallerScoresTiles) {
  const std::vector<std::string> names = {"gqa2 causal d32 prefill", "mha causal dropout prefill d64",
                                          "prefill d16 two blocks non-causal"};
  LoweredWorkgroupStorage lowered(8192);
  ASSERT_EQ(webgpu::flash_scores_tiling(64, 8192, 256)->t, 32u);
  for (const Case& c : cases()) {
    if (std::find(names.begin(), names.end(), c.name) == names.end()) continue;
    SCOPED_TRACE(c.name);
    expect_backward_parity(c);
  }
}

// Which backward runs: the scores' gradients in tiles then products where
// the scores may be written whole (no window; causal from key 0 over as
// many keys as queries, or not causal), smaller tiles at less workgroup
// storage, and the grad_k / grad_v kernel otherwise; each path's parity is
// checked above over the cases that reach it.
TEST(AttentionParity, BackwardPathByShape) {
  AttentionPlan p;
  p.batch = 2, p.seq_q = 129, p.seq_k = 129, p.heads = 4, p.kv_heads = 2, p.head_dim = 64, p.causal = true;
  auto path = [&](const AttentionPlan& plan) { return webgpu::attention_backward_kernel(plan, gpu_device()); };
  const uint64_t storage = gpu_device().runtime().workgroup_storage();
  const std::string scores = storage >= 16384 ? "flash_bwd_scores 64x64 + products" : "flash_bwd_scores 32x32 + products";
  EXPECT_EQ(path(p), scores);
  AttentionPlan full = p;
  full.causal = false, full.seq_k = 70;
  EXPECT_EQ(path(full), scores);
  AttentionPlan window = p, offset = p;
  window.window = 16;
  offset.seq_k = 140, offset.kv_offset = 11;
  EXPECT_EQ(path(window).rfind("flash_bwd_dkv", 0), 0u) << path(window);
  EXPECT_EQ(path(offset).rfind("flash_bwd_dkv", 0), 0u) << path(offset);
  {
    LoweredWorkgroupStorage lowered(8192);
    EXPECT_EQ(path(p), "flash_bwd_scores 32x32 + products");
  }
  {
    LoweredBindingLimit lowered(2 * 4 * 129 * 132 * 4 - 4);  // P [B * H, Sq, Sk padded to 132] one float over it
    EXPECT_EQ(path(p).rfind("flash_bwd_dkv", 0), 0u) << path(p);
  }
}

// GQA whose per-query-head partials of grad_k / grad_v exceed the binding
// limit (q and k still fit): the tiled kernel loops over the group's heads
// in one workgroup instead of splitting them.
TEST(AttentionParity, BackwardGqaWithoutSplitHeads) {
  {
    LoweredBindingLimit lowered(110000);  // q 102400 bytes, partials 119808
    expect_backward_parity(make("gqa2 d64 causal offset", 1, 100, 117, 4, 2, 64, opts(true, 17)));
  }
  LoweredBindingLimit lowered(60000);  // q 51200 bytes, partials 76800
  expect_backward_parity(make("gqa2 d32 dropout window", 1, 100, 150, 4, 2, 32, opts(true, 50, 30, 0.2f, 5)));
}

// q, k and v as column blocks of one joined projection qkv [B, T, (H + 2
// Hkv) D]: the packed ops against the split tensors through the dense ops,
// on both backends. Where WebGPU's kernels read them in place (the tiled
// forward; the scores' gradients and products backward, a KV head a query
// head) the results must be the same floats as the dense kernels' on the
// same device; elsewhere (GQA's backward, k's or v's columns at an offset
// the device cannot bind, a decode-sized forward) the op splits qkv itself.
// The d12 case's k and v start 96 and 192 bytes into a row: unbindable at
// SwiftShader's alignment of 256, bindable at a GPU's of 16 or 32.
TEST(AttentionParity, PackedQkv) {
  struct Packed {
    std::string name;
    int64_t batch, seq, heads, kv_heads, dim;
    AttentionOptions o;
    bool fwd_in_place, bwd_in_place;  // where k's and v's offsets are bindable
  };
  const std::vector<Packed> packed = {
      {"mha causal dropout", 2, 80, 4, 4, 16, opts(true, 0, 0, 0.2f, 9), true, true},
      {"mha non-causal d32", 1, 70, 2, 2, 32, opts(false), true, true},
      {"gqa2 causal", 1, 70, 4, 2, 32, opts(true), true, false},
      {"k and v at offsets of 96 and 192 bytes", 1, 40, 2, 2, 12, opts(true), true, true},
      {"decode-sized", 2, 5, 2, 2, 32, opts(true), false, true},
  };
  const Device gpu = gpu_device();
  for (const Packed& c : packed) {
    SCOPED_TRACE(c.name);
    AttentionPlan plan;
    plan.batch = c.batch, plan.seq_q = plan.seq_k = c.seq, plan.heads = c.heads, plan.kv_heads = c.kv_heads;
    plan.head_dim = c.dim, plan.causal = c.o.causal;
    const uint64_t align = gpu.runtime().limits().storage_offset_alignment;
    const bool aligned = c.heads * c.dim * 4 % align == 0 && (c.heads + c.kv_heads) * c.dim * 4 % align == 0;
    EXPECT_EQ(aligned && webgpu::attention_forward_strided(plan, gpu), aligned && c.fwd_in_place);
    EXPECT_EQ(aligned && webgpu::attention_backward_strided(plan, gpu), aligned && c.bwd_in_place);
    const int64_t hd = c.heads * c.dim, kvd = c.kv_heads * c.dim;
    const Tensor qkv_cpu = random_tensor({c.batch, c.seq, hd + 2 * kvd}, 21);
    const Tensor g_cpu = random_tensor({c.batch, c.seq, c.heads, c.dim}, 22);
    Tensor want_cpu;
    for (const Device& dev : {Device::cpu(), gpu}) {
      const Tensor qkv = qkv_cpu.to(dev), g = g_cpu.to(dev);
      const std::vector<Tensor> parts = split_columns(qkv, {hd, kvd, kvd});
      const Tensor q = parts[0].reshape({c.batch, c.seq, c.heads, c.dim});
      const Tensor k = parts[1].reshape({c.batch, c.seq, c.kv_heads, c.dim});
      const Tensor v = parts[2].reshape({c.batch, c.seq, c.kv_heads, c.dim});
      const AttentionForward want = flash_attention_v2_lse(q, k, v, c.o);
      const AttentionGrads wg = flash_attention_v2_backward(q, k, v, want.out, g, c.o, nullptr, &want.lse);
      const Tensor want_grad = concat_columns({wg.grad_q.reshape({c.batch, c.seq, hd}),
                                               wg.grad_k.reshape({c.batch, c.seq, kvd}),
                                               wg.grad_v.reshape({c.batch, c.seq, kvd})});
      const AttentionForward got = flash_attention_v2_packed_lse(qkv, c.heads, c.kv_heads, c.o);
      EXPECT_EQ(got.out.shape(), want.out.shape());
      EXPECT_TRUE(all_close(got.out, want.out, 0, 0)) << dev.name() << " out";
      EXPECT_TRUE(all_close(got.lse, want.lse, 0, 0)) << dev.name() << " lse";
      const Tensor grad = flash_attention_v2_packed_backward(qkv, c.heads, c.kv_heads, got.out, g, c.o, nullptr,
                                                             &got.lse);
      EXPECT_EQ(grad.shape(), qkv.shape());
      EXPECT_TRUE(all_close(grad, want_grad, 0, 0)) << dev.name() << " grad";
      // Without the saved lse, recomputed by the packed forward.
      EXPECT_TRUE(all_close(flash_attention_v2_packed_backward(qkv, c.heads, c.kv_heads, got.out, g, c.o), want_grad,
                            0, 0)) << dev.name() << " grad, lse recomputed";
      if (dev.is_cpu()) want_cpu = want_grad;
      else EXPECT_TRUE(all_close(grad, want_cpu, 5e-4, 5e-3)) << "WebGPU against the CPU";
    }
  }
}

// The packed ops' operands: a width that is not (H + 2 Hkv) head_dims, H
// not a multiple of Hkv, qkv not [B, T, W], out or lse of the wrong shape.
TEST(AttentionValidation, PackedQkvShapes) {
  const Tensor qkv = random_tensor({1, 4, 48}, 1);  // 2 heads of 8 and 1 KV head: (2 + 2) * 12 = 48 too
  EXPECT_THROW(flash_attention_v2_packed_lse(qkv, 3, 2), ShapeError);  // 3 not a multiple of 2
  EXPECT_THROW(flash_attention_v2_packed_lse(qkv, 5, 1), ShapeError);  // 48 % 7 != 0
  EXPECT_THROW(flash_attention_v2_packed_lse(qkv, 0, 1), ShapeError);
  EXPECT_THROW(flash_attention_v2_packed_lse(qkv, 2, -1), ShapeError);
  EXPECT_THROW(flash_attention_v2_packed_lse(qkv, int64_t(1) << 62, int64_t(1) << 62), ShapeError);  // no overflow
  EXPECT_THROW(flash_attention_v2_packed_lse(Tensor::zeros({1, 4, 0}), 1, 1), ShapeError);
  EXPECT_THROW(flash_attention_v2_packed_lse(qkv.reshape({1, 4, 2, 24}), 2, 1), ShapeError);
  EXPECT_THROW(flash_attention_v2_packed_lse(Tensor::zeros({1, 4, 48}, DType::I32), 2, 1), DTypeError);
  const AttentionForward f = flash_attention_v2_packed_lse(qkv, 2, 1);
  EXPECT_EQ(f.out.shape(), (Shape{1, 4, 2, 12}));
  const Tensor g = random_tensor({1, 4, 2, 12}, 2);
  EXPECT_THROW(flash_attention_v2_packed_backward(qkv, 2, 1, f.out.reshape({1, 4, 24}), g), ShapeError);
  const Tensor bad_lse = Tensor::zeros({1, 4, 2});
  EXPECT_THROW(flash_attention_v2_packed_backward(qkv, 2, 1, f.out, g, {}, nullptr, &bad_lse), ShapeError);
  try {
    flash_attention_v2_packed_lse(qkv, 5, 1);
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("num_heads 5"), std::string::npos) << e.what();
  }
}

// A long sequence on one small head: 1000 queries, causal, forward and
// backward (kept small: SwiftShader is slow).
TEST(AttentionParity, Sequence1000) {
  Case c = make("seq 1000", 1, 1000, 1000, 1, 1, 16, opts(true));
  Operands cpu = operands(c);
  std::vector<float> want = reference(c, cpu.q, cpu.k, cpu.v, nullptr);
  Operands gpu = cpu.to(gpu_device());
  AttentionForward fg = flash_attention_v2_lse(gpu.q, gpu.k, gpu.v, c.o);
  EXPECT_TRUE(all_close(fg.out.to_f32(), want, 1e-4, 1e-3));
  AttentionForward fc = flash_attention_v2_lse(cpu.q, cpu.k, cpu.v, c.o);
  AttentionGrads wg = flash_attention_v2_backward(cpu.q, cpu.k, cpu.v, fc.out, cpu.g, c.o, nullptr, &fc.lse);
  AttentionGrads gg = flash_attention_v2_backward(gpu.q, gpu.k, gpu.v, fg.out, gpu.g, c.o, nullptr, &fg.lse);
  EXPECT_TRUE(all_close(gg.grad_q, wg.grad_q, 5e-4, 5e-3));
  EXPECT_TRUE(all_close(gg.grad_k, wg.grad_k, 5e-4, 5e-3));
  EXPECT_TRUE(all_close(gg.grad_v, wg.grad_v, 5e-4, 5e-3));
}

TEST(AttentionParity, SingleHeadFlashAttention) {
  for (bool causal : {false, true}) {
    Tensor q = random_tensor({7, 16}, 1), k = random_tensor({9, 16}, 2), v = random_tensor({9, 16}, 3);
    AttentionOptions o = opts(causal);
    Tensor want = flash_attention_v2(q.reshape({1, 7, 1, 16}), k.reshape({1, 9, 1, 16}), v.reshape({1, 9, 1, 16}), o);
    Tensor cpu = flash_attention(q, k, v, causal);
    ASSERT_EQ(cpu.shape(), (Shape{7, 16}));
    EXPECT_TRUE(all_close(cpu.to_f32(), want.to_f32(), 0, 0));
    EXPECT_TRUE(cpu_gpu_parity({q, k, v}, [&](const std::vector<Tensor>& t) { return flash_attention(t[0], t[1], t[2], causal); },
                               1e-4, 1e-3));
  }
}

// With v one-hot per key (D = Sk), out[i, j] = P_ij * z_ij: the dropout
// decisions are visible. They match forge::dropout of the probability
// tensor, repeat per seed, change with the seed, keep ~(1 - p) of the
// entries, and the backward uses the same ones.
TEST(AttentionValues, DropoutMaskKeepRateAndDeterminism) {
  const int64_t sq = 129, sk = 128;
  const float p = 0.25f;
  std::vector<float> eye(size_t(sk * sk), 0.0f);
  for (int64_t j = 0; j < sk; ++j) eye[size_t(j * sk + j)] = 1.0f;
  Tensor v = Tensor::from_vector(eye, {1, sk, 1, sk});
  Tensor q = random_tensor({1, sq, 1, sk}, 21), k = random_tensor({1, sk, 1, sk}, 22);
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    SCOPED_TRACE(d.name());
    Tensor qd = q.to(d), kd = k.to(d), vd = v.to(d);
    auto run = [&](uint64_t seed) { return flash_attention_v2(qd, kd, vd, opts(false, 0, 0, p, seed)).to_f32(); };
    std::vector<float> a = run(5), b = run(5), c = run(6);
    EXPECT_EQ(a, b) << "same seed, same output";
    EXPECT_NE(a, c) << "another seed, another mask";
    Tensor ones = Tensor::from_vector(std::vector<float>(size_t(sq * sk), 1.0f), {1, 1, sq, sk});
    std::vector<float> keep = dropout(ones, p, 5).to_f32();
    int64_t kept = 0;
    for (size_t e = 0; e < a.size(); ++e) {
      EXPECT_EQ(a[e] != 0.0f, keep[e] != 0.0f) << "entry " << e;
      kept += a[e] != 0.0f;
    }
    double rate = double(kept) / double(a.size());
    EXPECT_NEAR(rate, 1.0 - p, 0.02) << "keep rate over " << a.size() << " probabilities";
  }
}

TEST(AttentionValues, FullyMaskedRowsAreZeros) {
  Tensor q = random_tensor({1, 3, 2, 16}, 1), k = random_tensor({1, 4, 1, 16}, 2), v = random_tensor({1, 4, 1, 16}, 3);
  std::vector<float> m(size_t(3 * 4), 0.0f);
  for (int j = 0; j < 4; ++j) m[size_t(4 + j)] = -INFINITY;  // query 1 sees nothing
  Tensor mask = Tensor::from_vector(m, {1, 1, 3, 4});
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    SCOPED_TRACE(d.name());
    Tensor md = mask.to(d);
    std::vector<float> out = flash_attention_v2(q.to(d), k.to(d), v.to(d), {}, &md).to_f32();
    for (int64_t e = 0; e < 2 * 16; ++e) EXPECT_EQ(out[size_t(32 + e)], 0.0f);
    for (float x : out) EXPECT_FALSE(std::isnan(x));
    // A window of 1 on a non-causal query past every key sees nothing either.
    std::vector<float> w = flash_attention_v2(q.to(d), k.to(d), v.to(d), opts(false, 10, 1)).to_f32();
    for (float x : w) EXPECT_EQ(x, 0.0f);
    // No keys at all: zeros, and zero gradients.
    Tensor none = Tensor::zeros({1, 0, 1, 16}).to(d);
    AttentionForward f = flash_attention_v2_lse(q.to(d), none, none);
    for (float x : f.out.to_f32()) EXPECT_EQ(x, 0.0f);
    for (float x : f.lse.to_f32()) EXPECT_EQ(x, -INFINITY);
    AttentionGrads g = flash_attention_v2_backward(q.to(d), none, none, f.out, q.to(d));
    for (float x : g.grad_q.to_f32()) EXPECT_EQ(x, 0.0f);
  }
}

TEST(AttentionValidation, ShapesTypesOptionsDevices) {
  const std::string op = "flash_attention_v2", bop = "flash_attention_v2_backward";
  Tensor q = random_tensor({1, 3, 4, 8}, 1), k = random_tensor({1, 5, 2, 8}, 2), v = random_tensor({1, 5, 2, 8}, 3);
  expect_error<ShapeError>(op, [&] { flash_attention_v2(q.reshape({3, 4, 8}), k, v); });
  expect_error<ShapeError>(op, [&] { flash_attention_v2(q, k, random_tensor({1, 4, 2, 8}, 4)); });
  expect_error<ShapeError>(op, [&] { flash_attention_v2(q, random_tensor({1, 5, 3, 8}, 4), random_tensor({1, 5, 3, 8}, 5)); });
  expect_error<ShapeError>(op, [&] { flash_attention_v2(q, random_tensor({2, 5, 2, 8}, 4), random_tensor({2, 5, 2, 8}, 5)); });
  expect_error<ShapeError>(op, [&] { flash_attention_v2(q, random_tensor({1, 5, 2, 4}, 4), random_tensor({1, 5, 2, 4}, 5)); });
  Tensor bad_mask = random_tensor({1, 2, 3, 5}, 6);  // 2 heads, q has 4
  expect_error<ShapeError>(op, [&] { flash_attention_v2(q, k, v, {}, &bad_mask); });
  Tensor mask3 = random_tensor({3, 5}, 6);
  expect_error<ShapeError>(op, [&] { flash_attention_v2(q, k, v, {}, &mask3); });
  Tensor qi = Tensor::zeros({1, 3, 4, 8}, DType::I32);
  expect_error<DTypeError>(op, [&] { flash_attention_v2(qi, k, v); });
  expect_error<ValueError>(op, [&] { flash_attention_v2(q, k, v, opts(false, 0, 0, 1.0f)); });
  expect_error<ValueError>(op, [&] { flash_attention_v2(q, k, v, opts(false, -1)); });
  expect_error<ValueError>(op, [&] { flash_attention_v2(q, k, v, opts(false, 0, -2)); });
  expect_error<DeviceError>(op, [&] { flash_attention_v2(q, k.to(gpu_device()), v); });
  Tensor big = random_tensor({1, 2, 1, 160}, 7).to(gpu_device());
  expect_error<ShapeError>(op, [&] { flash_attention_v2(big, big, big); });
  expect_error<ShapeError>("flash_attention", [&] { flash_attention(q, k, v, false); });
  Tensor out = flash_attention_v2(q, k, v);
  expect_error<ShapeError>(bop, [&] { flash_attention_v2_backward(q, k, v, out.reshape({1, 3, 2, 16}), out); });
  Tensor lse = Tensor::zeros({1, 4, 2});
  expect_error<ShapeError>(bop, [&] { flash_attention_v2_backward(q, k, v, out, out, {}, nullptr, &lse); });
  expect_error<ValueError>(bop, [&] { flash_attention_v2_backward(q, k, v, out, out, opts(false, 0, 0, -0.5f)); });
}

}  // namespace
}  // namespace forge::testing
