// GPT-2 training against the Hugging Face reference (tests/fixtures/gpt2-tiny):
// the step-0 loss, every parameter's gradient, the global gradient norm, the
// parameters after one AdamW step and ten losses of training on one batch, on
// the CPU and on WebGPU; the backward against central finite differences
// with dropout on; gradient accumulation against one large batch.
//
// Tolerances. CPU: loss 1e-5, each gradient within 1e-4 of its tensor's
// largest reference magnitude (the fixture's bounds), gradient norm 1e-4
// relative. After one AdamW step a parameter moves by lr * g / (|g| + eps),
// about lr = 1e-3 times the sign of its gradient, so an element whose
// reference gradient is within the gradient tolerance of zero may move the
// other way: step1 is compared at 1e-6 absolute where |g| is above 10x the
// gradient tolerance or exactly zero (wpe rows beyond T), on at least a
// quarter of each tensor's elements, and within 2 * lr elsewhere (the key
// bias's gradient, for one, is zero up to rounding: softmax ignores it). Ten losses: 2e-5 (errors
// compound over ten updates). WebGPU: the same with 2e-4 relative on
// gradients and 5e-5 on losses (tiled matmuls and tree reductions sum in
// another order; WGSL's exp and tanh may be a few ulp off libm).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "forge/gpt2_train.h"
#include "forge/safetensors.h"
#include "parity/parity.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::gpu_device;

namespace {

const std::string kDir = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";

struct Ref {
  SafetensorsFile f = SafetensorsFile::open(kDir + "/reference.safetensors");
  std::vector<float> get(const std::string& n) const { return f.get(n).to_f32(); }
  Tensor ids() const {
    std::vector<float> v = get("input_ids");
    return Tensor::from_vector(std::vector<uint32_t>(v.begin(), v.end()), f.get("input_ids").shape());
  }
};

struct Tol {
  double loss, grad_rel, losses10;
};
constexpr Tol kCpu{1e-5, 1e-4, 2e-5};
constexpr Tol kGpu{2e-5, 2e-4, 5e-5};

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

// |got - want| <= tol elementwise; names the worst element.
::testing::AssertionResult within(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " vs " << want.size();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::isnan(got[i]) ? INFINITY : std::fabs(double(got[i]) - want[i]);
    if (e > worst) worst = e, at = i;
  }
  if (worst > tol)
    return ::testing::AssertionFailure() << "element " << at << ": got " << got[at] << ", want " << want[at]
                                         << " (|diff| " << worst << " > " << tol << ")";
  return ::testing::AssertionSuccess();
}

Gpt2TrainConfig fixture_config() {
  Gpt2TrainConfig c;
  c.schedule.lr = 1e-3;
  c.schedule.cosine = false;
  c.weight_decay = 0.01;
  return c;
}

void check_first_step(const Device& dev, const Tol& tol) {
  Ref ref;
  Gpt2 model = Gpt2::load(kDir, dev);
  Gpt2Trainer trainer(model, fixture_config());
  trainer.keep_grads = true;
  const Tensor ids = ref.ids();
  const Gpt2StepResult r = trainer.step({{ids, gpt2_shifted_targets(ids)}});
  EXPECT_NEAR(r.loss, ref.get("loss")[0], tol.loss) << dev.name();
  const double norm = ref.get("grad_norm")[0];
  EXPECT_NEAR(r.grad_norm, norm, tol.grad_rel * norm) << dev.name();

  Gpt2Grads grads = trainer.last_grads();
  // The products wrote the weight matrices' gradients straight into the
  // optimizer's flat gradient page (one storage), not into fresh tensors.
  const void* page = grads.g.h.front().c_attn.w.storage_id();
  for (const Gpt2Block& b : grads.g.h)
    for (const Tensor* t : {&b.c_attn.w, &b.attn_proj.w, &b.fc.w, &b.mlp_proj.w})
      EXPECT_EQ(t->storage_id(), page) << dev.name();
  EXPECT_EQ(grads.g.wte.front().storage_id(), page) << dev.name();
  const std::vector<Gpt2HostTensor> after = trainer.host_weights();
  size_t i = 0;
  for (auto& [name, t] : gpt2_named_params(grads.g)) {
    const std::vector<float> want = ref.get("grad.transformer." + name);
    const double gtol = tol.grad_rel * max_abs(want);
    EXPECT_TRUE(within(t->to_vector<float>(), want, gtol)) << "grad." << name << " on " << dev.name();

    // step1: exact-ish where the gradient's sign is certain, within 2 lr elsewhere.
    ASSERT_EQ(after[i].name, name);
    const std::vector<float> step1 = ref.get("step1.transformer." + name);
    std::vector<float> sure_got, sure_want;
    for (size_t e = 0; e < want.size(); ++e) {
      const double d = std::fabs(double(after[i].values[e]) - step1[e]);
      if (std::fabs(want[e]) > 10 * gtol || want[e] == 0.0f) {  // zero: no position touches it (wpe beyond T)
        sure_got.push_back(after[i].values[e]);
        sure_want.push_back(step1[e]);
      } else {
        EXPECT_LE(d, 2e-3) << "step1." << name << "[" << e << "] on " << dev.name();
      }
    }
    EXPECT_TRUE(within(sure_got, sure_want, 1e-6)) << "step1." << name << " on " << dev.name();
    EXPECT_GT(sure_got.size(), want.size() / 4) << "step1." << name << ": too few elements checked tightly";
    ++i;
  }
}

void check_ten_losses(const Device& dev, const Tol& tol) {
  Ref ref;
  Gpt2 model = Gpt2::load(kDir, dev);
  Gpt2Trainer trainer(model, fixture_config());
  const Tensor ids = ref.ids();
  const Gpt2MicroBatch mb{ids, gpt2_shifted_targets(ids)};
  const std::vector<float> want = ref.get("train_losses");
  for (size_t s = 0; s < want.size(); ++s)
    EXPECT_NEAR(trainer.step({mb}).loss, want[s], tol.losses10) << "step " << s << " on " << dev.name();
}

}  // namespace

TEST(Gpt2TrainGolden, FirstStepCpu) { check_first_step(Device::cpu(), kCpu); }
TEST(Gpt2TrainGolden, FirstStepWebGpu) { check_first_step(gpu_device(), kGpu); }
TEST(Gpt2TrainGolden, TenLossesCpu) { check_ten_losses(Device::cpu(), kCpu); }
TEST(Gpt2TrainGolden, TenLossesWebGpu) { check_ten_losses(gpu_device(), kGpu); }

// The backward against central differences of the loss, with every dropout
// on (its masks are a pure function of the seed, so the loss is a smooth
// function of the weights). f32 losses of ~7 carry ~5e-7 of rounding, so with
// a step of 1e-2 the difference quotient is good to ~1e-4 plus the curvature
// term; elements with the largest gradient are checked at 2e-3 + 2%.
TEST(Gpt2TrainGolden, GradientsMatchFiniteDifferencesWithDropoutCpu) {
  Ref ref;
  const Tensor ids = ref.ids();
  const std::vector<int32_t> targets = gpt2_shifted_targets(ids);
  Gpt2Dropout drop{0.1f, 0.1f, 0.1f};
  const uint64_t seed = 77;
  int64_t n = 0;
  for (int32_t t : targets) n += t >= 0;

  Gpt2 model = Gpt2::load(kDir, Device::cpu());
  Gpt2Grads grads;
  Gpt2Activations acts = gpt2_forward_train(model, ids, drop, seed);
  gpt2_backward(model, acts, targets, float(1.0 / double(n)), grads);
  auto loss_at = [&] {
    Gpt2Activations a = gpt2_forward_train(model, ids, drop, seed);
    Gpt2Grads scratch;
    return double(gpt2_backward(model, a, targets, 0.0f, scratch).to_vector<float>()[0]) / double(n);
  };

  Gpt2Weights w = model.weights();
  auto params = gpt2_named_params(w);
  auto gparams = gpt2_named_params(grads.g);
  for (const char* name : {"wpe.weight", "h.0.attn.c_attn.weight", "h.1.ln_1.weight", "h.1.mlp.c_fc.bias",
                           "wte.weight"}) {
    size_t p = 0;
    while (params[p].first != name) ++p;
    const std::vector<float> g = gparams[p].second->to_vector<float>();
    const size_t e = size_t(std::max_element(g.begin(), g.end(), [](float a, float b) {
                              return std::fabs(a) < std::fabs(b);
                            }) - g.begin());
    float* v = params[p].second->data<float>() + e;
    const float orig = *v, h = 1e-2f;
    *v = orig + h;
    const double up = loss_at();
    *v = orig - h;
    const double down = loss_at();
    *v = orig;
    const double fd = (up - down) / (2.0 * h);
    EXPECT_NEAR(g[e], fd, 2e-3 + 0.02 * std::fabs(fd)) << name << "[" << e << "]";
  }
}

// Two micro-batches of one sequence each give the step of one batch of two.
TEST(Gpt2TrainGolden, AccumulationMatchesOneBatchCpu) {
  Ref ref;
  const Tensor ids = ref.ids();  // [2, 16]
  const std::vector<uint32_t> all = ids.to_vector<uint32_t>();
  auto row = [&](int b) {
    Tensor r = Tensor::from_vector(std::vector<uint32_t>(all.begin() + b * 16, all.begin() + (b + 1) * 16), {1, 16});
    return Gpt2MicroBatch{r, gpt2_shifted_targets(r)};
  };
  Gpt2 one = Gpt2::load(kDir, Device::cpu()), two = Gpt2::load(kDir, Device::cpu());
  Gpt2Trainer t1(one, fixture_config()), t2(two, fixture_config());
  for (int s = 0; s < 3; ++s) {
    const Gpt2StepResult a = t1.step({{ids, gpt2_shifted_targets(ids)}});
    const Gpt2StepResult b = t2.step({row(0), row(1)});
    EXPECT_NEAR(a.loss, b.loss, 1e-6) << "step " << s;
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-5 * a.grad_norm) << "step " << s;
  }
  const auto wa = t1.host_weights(), wb = t2.host_weights();
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(within(wa[i].values, wb[i].values, 1e-5)) << wa[i].name;
}

namespace {

// A WebGPU runtime that forwards to the suite's device and counts reads back.
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
    ++downloads;
    downloaded_bytes += bytes;
    return inner_.start_download(src, offset, bytes);
  }
  void copy(const gpu::Buffer& s, uint64_t so, const gpu::Buffer& d, uint64_t dof, uint64_t n) override {
    inner_.copy(s, so, d, dof, n);
  }
  void clear(const gpu::Buffer& dst, uint64_t offset, uint64_t bytes) override { inner_.clear(dst, offset, bytes); }
  void dispatch(const gpu::Dispatch& d) override { inner_.dispatch(d); }
  void flush() override { inner_.flush(); }
  void sync() override {
    ++syncs;
    inner_.sync();
  }
  int downloads = 0, syncs = 0;
  uint64_t downloaded_bytes = 0;

 private:
  gpu::Runtime& inner_;
};

}  // namespace

// A training step on WebGPU reads back the loss and the gradient norm (one
// download of two floats) and nothing else. Its dropout masks are the CPU's
// (Philox on the flat index), so the step also matches the CPU's within the
// WebGPU tolerances.
TEST(Gpt2TrainGolden, WebGpuStepReadsBackOnlyLossAndNorm) {
  auto counting = std::make_shared<CountingRuntime>(gpu_device().runtime());
  const Device dev(counting);
  Ref ref;
  Gpt2 model = Gpt2::load(kDir, dev);
  Gpt2TrainConfig cfg = fixture_config();
  cfg.grad_clip = 1.0f;
  cfg.dropout = {0.1f, 0.1f, 0.1f};
  Gpt2Trainer trainer(model, cfg);
  const Tensor ids = ref.ids();
  counting->downloads = counting->syncs = 0;
  counting->downloaded_bytes = 0;
  const Gpt2StepResult r = trainer.step({{ids, gpt2_shifted_targets(ids)}});
  EXPECT_EQ(counting->downloads, 1);
  EXPECT_EQ(counting->downloaded_bytes, 8u);
  EXPECT_EQ(counting->syncs, 0);

  Gpt2 cpu_model = Gpt2::load(kDir, Device::cpu());
  Gpt2Trainer cpu_trainer(cpu_model, cfg);
  const Gpt2StepResult c = cpu_trainer.step({{ids, gpt2_shifted_targets(ids)}});
  EXPECT_NEAR(r.loss, c.loss, kGpu.loss);
  EXPECT_NEAR(r.grad_norm, c.grad_norm, kGpu.grad_rel * c.grad_norm);
  EXPECT_GT(std::fabs(c.loss - ref.get("loss")[0]), 1e-3);  // dropout did change the loss
}

// The LM head over blocks of 64 positions (B2 x T64: 126 target rows, two
// blocks, the second partial) gives the step of the head in one piece: the
// blocks only change the order in which wte's gradient is summed.
TEST(Gpt2TrainGolden, BlockedLmHeadMatchesWholeCpuAndWebGpu) {
  std::vector<uint32_t> v(128);
  for (size_t i = 0; i < v.size(); ++i) v[i] = uint32_t((i * 7919 + 11) % 1000);
  const Tensor ids = Tensor::from_vector(v, {2, 64});
  const Gpt2MicroBatch mb{ids, gpt2_shifted_targets(ids)};
  auto run = [&](const Device& dev, int64_t head_rows) {
    Gpt2 model = Gpt2::load(kDir, dev);
    Gpt2TrainConfig cfg = fixture_config();
    cfg.head_rows = head_rows;
    Gpt2Trainer t(model, cfg);
    t.keep_grads = true;
    const Gpt2StepResult r = t.step({mb});
    Gpt2Grads g = t.last_grads();
    return std::make_pair(r, gpt2_named_params(g.g)[0].second->to_vector<float>());  // wte's gradient
  };
  const auto whole = run(Device::cpu(), 0), blocked = run(Device::cpu(), 64);
  EXPECT_NEAR(whole.first.loss, blocked.first.loss, 1e-6);
  EXPECT_NEAR(whole.first.grad_norm, blocked.first.grad_norm, 1e-6 * whole.first.grad_norm);
  EXPECT_TRUE(within(blocked.second, whole.second, 1e-6 * max_abs(whole.second)));
  const auto gpu = run(gpu_device(), 64);
  EXPECT_NEAR(gpu.first.loss, whole.first.loss, kGpu.loss);
  EXPECT_TRUE(within(gpu.second, whole.second, kGpu.grad_rel * max_abs(whole.second)));
}

// A token table split across bindings (a lowered limit: wte [1000, 128] is
// 512 KB, the limit 300 KB, every other tensor fits) trains like the whole
// table: three clipped steps on WebGPU give the CPU's losses and gradient
// norms, the host copies of the weights and the optimizer state hold wte
// whole, and that state loads back into the chunks.
TEST(Gpt2TrainGolden, ChunkedTokenTableTrainsLikeWholeWebGpu) {
  Gpt2Config c;
  c.vocab_size = 1000;
  c.n_positions = 32;
  c.n_embd = 128;
  c.n_layer = 1;
  c.n_head = 2;
  std::vector<uint32_t> v(32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = uint32_t((i * 7919 + 3) % 1000);  // ids in both chunks
  const Tensor ids = Tensor::from_vector(v, {2, 16});
  const Gpt2MicroBatch mb{ids, gpt2_shifted_targets(ids)};
  Gpt2TrainConfig cfg = fixture_config();
  cfg.grad_clip = 1.0f;

  Gpt2 cpu_model = Gpt2::random(c, 5, Device::cpu());
  Gpt2Trainer cpu(cpu_model, cfg);
  std::vector<Gpt2StepResult> want;
  for (int s = 0; s < 3; ++s) want.push_back(cpu.step({mb}));

  forge::testing::LoweredBindingLimit limit(300000);
  Gpt2 gpu_model = Gpt2::random(c, 5, gpu_device());
  ASSERT_EQ(gpu_model.weights().wte.size(), 2u);
  Gpt2Trainer gpu(gpu_model, cfg);
  for (int s = 0; s < 3; ++s) {
    const Gpt2StepResult r = gpu.step({mb});
    EXPECT_NEAR(r.loss, want[size_t(s)].loss, kGpu.losses10) << "step " << s;
    EXPECT_NEAR(r.grad_norm, want[size_t(s)].grad_norm, kGpu.grad_rel * want[size_t(s)].grad_norm) << "step " << s;
  }
  const std::vector<Gpt2HostTensor> w_gpu = gpu.host_weights(), w_cpu = cpu.host_weights();
  ASSERT_EQ(w_gpu.size(), w_cpu.size());
  EXPECT_EQ(w_gpu[0].name, "wte.weight");
  EXPECT_EQ(w_gpu[0].shape, (Shape{1000, 128}));
  // Each AdamW step moves an element by about lr; where a gradient is near
  // zero the two backends may step opposite ways: within 2 lr per step.
  for (size_t i = 0; i < w_gpu.size(); ++i)
    EXPECT_TRUE(within(w_gpu[i].values, w_cpu[i].values, 6 * cfg.schedule.lr)) << w_gpu[i].name;

  Gpt2Trainer again(gpu_model, cfg);
  again.load_state(gpu.host_state(), 3);
  const std::vector<Gpt2HostTensor> s1 = gpu.host_state(), s2 = again.host_state();
  ASSERT_EQ(s1.size(), s2.size());
  for (size_t i = 0; i < s1.size(); ++i) {
    EXPECT_EQ(s1[i].name, s2[i].name);
    EXPECT_EQ(s1[i].shape, s2[i].shape);
    EXPECT_EQ(s1[i].values, s2[i].values) << s1[i].name;
  }
}
