// The flat optimizer: adamw_flat (forge/ops/train.h) on the CPU and WebGPU
// against a double reference, over odd sizes, gaps between segments, weight
// decay per segment, the fused clip and binding-limit chunks; AdamW over
// parameters gathered in flat pages against the per-tensor path (norm, clip,
// adamw per tensor), handles following the moved storages; and the dispatch
// count of an optimizer step, which must not grow with the parameter count.
#include <array>
#include <cmath>
#include <map>
#include <memory>

#include "forge/gpt2_train.h"
#include "forge/train.h"
#include "parity/parity.h"

using namespace forge;
using namespace forge::testing;

namespace {

// (begin, end, decay) rows; elements of no segment must stay as they were.
struct Seg {
  uint32_t begin, end, decay;
};

Tensor seg_table(const std::vector<Seg>& segs, const Device& d) {
  std::vector<uint32_t> t;
  for (const Seg& s : segs) t.insert(t.end(), {s.begin, s.end, s.decay});
  return Tensor::from_vector(t, {int64_t(segs.size()), 3}, d);
}

struct Ref {
  std::vector<double> p, m, v;
};

// torch.optim.AdamW in double after scaling g by the clip factor, inside the
// segments only.
void ref_step(Ref& s, const std::vector<float>& g, const std::vector<Seg>& segs, double clip, const AdamParams& a) {
  const double bc1 = 1 - std::pow(a.beta1, double(a.step)), bc2 = 1 - std::pow(a.beta2, double(a.step));
  for (const Seg& sg : segs)
    for (uint32_t i = sg.begin; i < sg.end; ++i) {
      const double gi = double(g[i]) * clip;
      s.p[i] *= 1 - a.lr * (sg.decay ? a.weight_decay : 0.0);
      s.m[i] = a.beta1 * s.m[i] + (1 - a.beta1) * gi;
      s.v[i] = a.beta2 * s.v[i] + (1 - a.beta2) * gi * gi;
      s.p[i] -= a.lr / bc1 * s.m[i] / (std::sqrt(s.v[i]) / std::sqrt(bc2) + a.eps);
    }
}

std::vector<float> f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Three steps of adamw_flat over n elements on every device against the
// reference; clip_to > 0 clips (the squared norm given as 4 * clip_to^2,
// so the factor is about 1/2).
void check_flat(int64_t n, const std::vector<Seg>& segs, float clip_to) {
  const std::vector<float> p0 = random_values(n, 1), m0 = random_values(n, 2, -0.1f, 0.1f),
                           v0 = random_values(n, 3, 0.0f, 0.01f);
  Ref ref{{p0.begin(), p0.end()}, {m0.begin(), m0.end()}, {v0.begin(), v0.end()}};
  const float norm_sq = 4.0f * clip_to * clip_to;
  const double clip = clip_to > 0 ? std::min(1.0f, clip_to / (std::sqrt(norm_sq) + 1e-6f)) : 1.0;
  std::vector<Device> devices = test_devices();
  std::vector<std::array<Tensor, 4>> st;
  for (const Device& d : devices)
    st.push_back({Tensor::from_vector(p0, {n}, d), Tensor(), Tensor::from_vector(m0, {n}, d),
                  Tensor::from_vector(v0, {n}, d)});
  for (int step = 1; step <= 3; ++step) {
    AdamParams a{1e-2, 0.9, 0.95, 1e-8, 0.1, step};
    const std::vector<float> g = random_values(n, 100 + uint32_t(step));
    ref_step(ref, g, segs, clip, a);
    for (size_t k = 0; k < devices.size(); ++k) {
      const Device& d = devices[k];
      st[k][1] = Tensor::from_vector(g, {n}, d);
      const Tensor ns = Tensor::from_vector(std::vector<float>{norm_sq}, {1}, d);
      adamw_flat(st[k][0], st[k][1], st[k][2], st[k][3], seg_table(segs, d), a, ns, clip_to);
      EXPECT_EQ(st[k][1].to_vector<float>(), g) << "the gradient is not changed";
    }
  }
  for (size_t k = 0; k < devices.size(); ++k) {
    // Three f32 steps against double (updates ~lr): 1e-6 absolute and
    // relative, as adamw's own reference test; untouched elements exactly.
    const std::string where = devices[k].name() + " n=" + std::to_string(n);
    EXPECT_TRUE(all_close(st[k][0].to_vector<float>(), f32(ref.p), 1e-6, 1e-6)) << where;
    EXPECT_TRUE(all_close(st[k][2].to_vector<float>(), f32(ref.m), 1e-7, 1e-6)) << where;
    EXPECT_TRUE(all_close(st[k][3].to_vector<float>(), f32(ref.v), 1e-9, 1e-6)) << where;
  }
  // A GPU's sqrt and division may be a few ulp off (see NnValues.AdamW...):
  // on an H200, 3e-9 apart on an update of 1e-3 (3e-6 relative).
  if (devices.size() > 1)
    EXPECT_TRUE(all_close(st[1][0].to_vector<float>(), st[0][0].to_vector<float>(), 1e-8, 1e-6)) << n;
}

TEST(FlatAdamW, MatchesReferenceOnEveryBackend) {
  check_flat(1, {{0, 1, 1}}, 0.0f);
  check_flat(3, {{0, 1, 0}, {2, 3, 1}}, 0.0f);  // element 1 in no segment
  check_flat(17, {{0, 5, 1}, {5, 9, 0}, {12, 14, 1}}, 0.5f);
  check_flat(1029, {{0, 129, 0}, {129, 1000, 1}, {1003, 1029, 0}}, 2.0f);
}

// Under a 4 KiB binding limit 3001 elements take three dispatches; segments
// index the whole buffer, so one that crosses a dispatch boundary is fine.
TEST(FlatAdamW, ChunkedUnderLoweredBindingLimit) {
  LoweredBindingLimit limit(4096);
  check_flat(3001, {{0, 1000, 1}, {1000, 1030, 0}, {1100, 3001, 1}}, 0.7f);
}

// One segment, no clipping: the per-tensor adamw's very formula (bitwise on
// the CPU).
TEST(FlatAdamW, OneSegmentIsAdamW) {
  AdamParams a{1e-3, 0.9, 0.999, 1e-8, 0.01, 2};
  Tensor w = random_tensor({517}, 1), g = random_tensor({517}, 2);
  Tensor m = random_tensor({517}, 3, 0, 0.1f), v = random_tensor({517}, 4, 0, 0.1f);
  Tensor w2 = w.clone(), m2 = m.clone(), v2 = v.clone();
  adamw(w, g, m, v, a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step);
  adamw_flat(w2, g, m2, v2, seg_table({{0, 517, 1}}, Device::cpu()), a);
  EXPECT_TRUE(all_close(w2, w, 0, 0));
  EXPECT_TRUE(all_close(m2, m, 0, 0));
  EXPECT_TRUE(all_close(v2, v, 0, 0));
}

TEST(FlatAdamW, BadOperandsAreErrors) {
  AdamParams a;
  Tensor w = random_tensor({8}, 1), g = random_tensor({8}, 2), m = Tensor::zeros({8}), v = Tensor::zeros({8});
  const Device cpu = Device::cpu();
  expect_error<ValueError>("adamw_flat", [&] { adamw_flat(w, g, m, v, seg_table({{4, 8, 1}, {0, 2, 1}}, cpu), a); },
                           "not sorted");
  expect_error<ValueError>("adamw_flat", [&] { adamw_flat(w, g, m, v, seg_table({{0, 9, 1}}, cpu), a); });
  expect_error<ValueError>("adamw_flat", [&] { adamw_flat(w, g, m, v, seg_table({{0, 8, 2}}, cpu), a); });
  Tensor short_g = random_tensor({7}, 2);
  expect_error<ShapeError>("adamw_flat", [&] { adamw_flat(w, short_g, m, v, seg_table({{0, 8, 1}}, cpu), a); });
  expect_error<ShapeError>("adamw_flat",
                           [&] { adamw_flat(w, g, m, v, Tensor::zeros({2, 2}, DType::U32), a); });
  expect_error<ValueError>("adamw_flat", [&] { adamw_flat(w, g, m, v, seg_table({{0, 8, 1}}, cpu), a, Tensor(), 1.0f); },
                           "norm_sq");
  AdamParams bad;
  bad.step = 0;
  expect_error<ValueError>("adamw_flat", [&] { adamw_flat(w, g, m, v, seg_table({{0, 8, 1}}, cpu), bad); });
}

// ---- Storages moved into flat buffers ----------------------------------------

// Every handle follows a moved storage, views included, also when the flat
// buffer it went into moves in turn; a storage cannot move into itself.
TEST(FlatAdamW, MovedStoragesKeepTheirHandles) {
  for (const Device& d : test_devices()) {
    Tensor a = random_tensor({2, 64}, 1).to(d);
    const std::vector<float> values = a.to_vector<float>();
    Tensor row1 = a.slice_rows(1, 2);
    Tensor page = Tensor::zeros({256}, DType::F32, d), bigger = Tensor::zeros({1024}, DType::F32, d);
    a.move_storage_into(page, 256);
    EXPECT_EQ(a.to_vector<float>(), values) << d.name();
    EXPECT_EQ(a.byte_offset(), 256u);
    const std::vector<float> in_page = page.to_vector<float>();
    EXPECT_EQ(std::vector<float>(in_page.begin() + 64, in_page.begin() + 192), values);
    page.move_storage_into(bigger, 2048);
    EXPECT_EQ(row1.to_vector<float>(), std::vector<float>(values.begin() + 64, values.end())) << d.name();
    gradient_scale(row1, 2.0f);  // in place through the view, into `bigger`
    EXPECT_EQ(bigger.to_vector<float>()[512 + 64 + 64], values[64] * 2.0f) << d.name();
    expect_error<ValueError>("move_storage_into", [&] { bigger.move_storage_into(a, 0); });
    expect_error<ShapeError>("move_storage_into", [&] { a.move_storage_into(Tensor::zeros({64}, DType::F32, d), 0); });
  }
}

// ---- AdamW over flat pages ------------------------------------------------

// Parameters as a model holds them: tensors of their own, two row slices of
// one storage (64 floats a row: 256-byte aligned views), odd sizes.
struct Model {
  Tensor a, b, c, table, top, bottom;
  explicit Model(const Device& d) {
    a = random_tensor({3, 17}, 1).to(d);
    b = random_tensor({5}, 2).to(d);
    c = random_tensor({129}, 3).to(d);
    table = random_tensor({6, 64}, 4).to(d);
    top = table.slice_rows(0, 2);
    bottom = table.slice_rows(3, 6);  // row 2 belongs to no parameter
  }
  std::vector<NamedTensor> params() const {
    return {{"a", a}, {"b", b}, {"c", c}, {"table.top", top}, {"table.bottom", bottom}};
  }
};

AdamWConfig config(float clip) {
  AdamWConfig c;
  c.schedule.lr = 1e-2;
  c.schedule.cosine = false;
  c.weight_decay = 0.1;
  c.decays = [](const std::string&, const Shape& s) { return s.size() >= 2; };
  c.grad_clip = clip;
  return c;
}

// The per-tensor path AdamW took before the flat buffers: norm over the
// tensors, clip each in place, adamw each.
void per_tensor_step(std::vector<Tensor>& w, std::vector<Tensor>& m, std::vector<Tensor>& v, std::vector<Tensor> g,
                     const AdamWConfig& c, int64_t step) {
  const Tensor ns = gradient_norm_squared(g);
  if (c.grad_clip > 0)
    for (Tensor& t : g) clip_grad_by_norm(t, ns, c.grad_clip);
  for (size_t i = 0; i < w.size(); ++i)
    adamw(w[i], g[i], m[i], v[i], c.schedule.at(step - 1), c.beta1, c.beta2, c.eps,
          c.decays("", w[i].shape()) ? c.weight_decay : 0.0, step);
}

void check_pages(const Device& d, size_t want_pages) {
  Model model(d), ref_model(d);
  const std::vector<float> row2 = model.table.slice_rows(2, 3).to_vector<float>();
  AdamW opt(model.params(), config(0.5f));
  EXPECT_EQ(opt.pages(), want_pages) << d.name();
  std::vector<Tensor> rw, rm, rv;
  for (const NamedTensor& p : ref_model.params()) {
    rw.push_back(p.value);
    rm.push_back(Tensor::zeros(p.value.shape(), DType::F32, d));
    rv.push_back(Tensor::zeros(p.value.shape(), DType::F32, d));
  }
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<Tensor> g;
    uint32_t seed = 50 + uint32_t(step) * 10;
    for (const Tensor& t : rw) g.push_back(random_tensor(t.shape(), seed++).to(d));
    per_tensor_step(rw, rm, rv, g, config(0.5f), step);
    const AdamW::Update u = opt.step(g);
    EXPECT_NEAR(std::sqrt(u.norm_sq.to_vector<float>()[0]), std::sqrt(gradient_norm_squared(g).to_vector<float>()[0]),
                1e-5);
  }
  // The model's own handles (the tensors and the whole table) see the update.
  const std::vector<Tensor> got = {model.a, model.b, model.c, model.top, model.bottom};
  for (size_t i = 0; i < got.size(); ++i) {
    // The norm sums in another order (pages, not tensors): the clip factor
    // may differ in its last bits; 1e-6 as the reference tests.
    EXPECT_TRUE(all_close(got[i].to_vector<float>(), rw[i].to_vector<float>(), 1e-6, 1e-6)) << d.name() << " " << i;
    EXPECT_TRUE(all_close(opt.first_moments()[i].to_vector<float>(), rm[i].to_vector<float>(), 1e-7, 1e-5)) << i;
    EXPECT_TRUE(all_close(opt.second_moments()[i].to_vector<float>(), rv[i].to_vector<float>(), 1e-9, 1e-5)) << i;
  }
  EXPECT_EQ(model.table.slice_rows(2, 3).to_vector<float>(), row2) << "bytes of no parameter are left alone";

  // Saved moments go back into the flat buffers.
  AdamW again(ref_model.params(), config(0.5f));
  again.restore(3, opt.first_moments(), opt.second_moments());
  EXPECT_EQ(again.steps_done(), 3);
  EXPECT_EQ(again.first_moments()[4].to_vector<float>(), opt.first_moments()[4].to_vector<float>());
}

TEST(FlatAdamW, PagesMatchThePerTensorPathCpu) { check_pages(Device::cpu(), 1); }
TEST(FlatAdamW, PagesMatchThePerTensorPathWebGpu) { check_pages(gpu_device(), 1); }
// 1 KiB pages: a and b (256 B each once aligned) in one, c (768 B) in the
// next, the table (1536 B) in a page of its own.
TEST(FlatAdamW, SeveralPagesUnderLoweredBindingLimitWebGpu) {
  LoweredBindingLimit limit(1024);
  check_pages(gpu_device(), 3);
}

TEST(FlatAdamW, SharedElementsAreAnError) {
  Tensor t = random_tensor({4, 64}, 1);
  expect_error<ValueError>("adamw", [&] { AdamW({{"x", t}, {"y", t.slice_rows(1, 2)}}, config(0)); }, "share");
  expect_error<DTypeError>("adamw", [&] { AdamW({{"ids", Tensor::zeros({3}, DType::U32)}}, config(0)); });
}

// ---- Dispatches per step ---------------------------------------------------

// Forwards to the suite's device and counts dispatches by kernel name.
class CountingRuntime : public gpu::Runtime {
 public:
  explicit CountingRuntime(gpu::Runtime& inner) : inner_(inner) {}
  const gpu::AdapterInfo& adapter() const override { return inner_.adapter(); }
  const gpu::Limits& limits() const override { return inner_.limits(); }
  std::shared_ptr<gpu::Buffer> allocate(uint64_t bytes) override { return inner_.allocate(bytes); }
  void upload(const gpu::Buffer& dst, uint64_t offset, const void* src, uint64_t bytes) override {
    inner_.upload(dst, offset, src, bytes);
  }
  std::unique_ptr<gpu::PendingDownload> start_download(const gpu::Buffer& src, uint64_t offset,
                                                      uint64_t bytes) override {
    return inner_.start_download(src, offset, bytes);
  }
  void copy(const gpu::Buffer& s, uint64_t so, const gpu::Buffer& d, uint64_t dof, uint64_t n) override {
    inner_.copy(s, so, d, dof, n);
  }
  void clear(const gpu::Buffer& dst, uint64_t offset, uint64_t bytes) override { inner_.clear(dst, offset, bytes); }
  void dispatch(const gpu::Dispatch& d) override {
    ++kernels[std::string(d.kernel->name)];
    inner_.dispatch(d);
  }
  void flush() override { inner_.flush(); }
  void sync() override { inner_.sync(); }
  std::map<std::string, int> kernels;
  int total() const {
    int n = 0;
    for (auto& [k, c] : kernels) n += c;
    return n;
  }

 private:
  gpu::Runtime& inner_;
};

// An AdamW step of 5 or 60 parameters: the same few dispatches (one norm
// partial and final, one update), none per tensor.
TEST(FlatAdamW, StepDispatchesDoNotGrowWithParametersWebGpu) {
  auto counting = std::make_shared<CountingRuntime>(gpu_device().runtime());
  const Device dev(counting);
  std::vector<int> totals;
  for (int count : {5, 60}) {
    std::vector<NamedTensor> params;
    std::vector<Tensor> grads;
    for (int i = 0; i < count; ++i) {
      params.push_back({"p" + std::to_string(i), random_tensor({17 + i}, uint32_t(i)).to(dev)});
      grads.push_back(random_tensor({17 + i}, uint32_t(100 + i)).to(dev));
    }
    AdamW opt(params, config(1.0f));
    counting->kernels.clear();
    opt.step(grads);
    EXPECT_EQ(counting->kernels["adamw_flat"], 1) << count;
    EXPECT_EQ(counting->kernels["adamw"], 0) << count;
    EXPECT_EQ(counting->kernels["clip"], 0) << count;
    totals.push_back(counting->total());
  }
  EXPECT_EQ(totals[0], totals[1]);
  EXPECT_LE(totals[1], 3);  // sumsq partial, final, the update
}

// A GPT-2 training step's optimizer work is a constant number of
// dispatches whatever the depth: two layers or four, the same.
TEST(FlatAdamW, Gpt2StepOptimizerDispatchesWebGpu) {
  auto counting = std::make_shared<CountingRuntime>(gpu_device().runtime());
  const Device dev(counting);
  std::vector<int> optimizer;
  for (int layers : {2, 4}) {
    Gpt2Config c;
    c.vocab_size = 97;
    c.n_positions = 16;
    c.n_embd = 32;
    c.n_layer = layers;
    c.n_head = 2;
    Gpt2 model = Gpt2::random(c, 3, dev);
    Gpt2TrainConfig cfg;
    cfg.grad_clip = 1.0f;
    Gpt2Trainer trainer(model, cfg);
    std::vector<uint32_t> v(16);
    for (size_t i = 0; i < v.size(); ++i) v[i] = uint32_t((i * 31 + 7) % 97);
    const Tensor ids = Tensor::from_vector(v, {2, 8});
    counting->kernels.clear();
    trainer.step({{ids, gpt2_shifted_targets(ids)}});
    EXPECT_EQ(counting->kernels["adamw"], 0);
    EXPECT_EQ(counting->kernels["clip"], 0);
    EXPECT_EQ(counting->kernels["adamw_flat"], 1) << layers;
    optimizer.push_back(counting->kernels["adamw_flat"] + counting->kernels["sq_partial"] +
                        counting->kernels["sq_final"]);
  }
  EXPECT_EQ(optimizer[0], optimizer[1]);
}

}  // namespace
