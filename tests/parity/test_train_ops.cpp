// Training utilities (forge/ops/train.h): CPU vs WebGPU over odd sizes,
// values against double references, chunked paths, validation.
#include <cmath>
#include <functional>

#include "parity/parity.h"

using namespace forge;
using namespace forge::testing;

namespace {

const std::vector<Shape> kShapes = {{1}, {3}, {17}, {129}, {3, 17}, {2, 3, 129}, {1000, 3}};

TEST(TrainParity, InPlaceUpdates) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    Tensor w = random_tensor(s, seed++), g = random_tensor(s, seed++);
    // w + f32(-lr) g: a fused multiply-add may round once instead of twice:
    // 1e-7 absolute for |w|, |g| <= 1.
    EXPECT_TRUE(cpu_gpu_parity({w, g}, [](auto& t) { Tensor y = t[0].clone(); sgd_update(y, t[1], 0.01f); return y; },
                               1e-7, 0))
        << shape_str(s);
    // One add, one product: exact.
    EXPECT_TRUE(cpu_gpu_parity({w, g}, [](auto& t) { Tensor y = t[0].clone(); gradient_accumulate(y, t[1]); return y; },
                               0, 0))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({w}, [](auto& t) { Tensor y = t[0].clone(); gradient_scale(y, 0.37f); return y; }, 0, 0))
        << shape_str(s);
  }
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor w = Tensor::from_vector<float>({1, 2, 3}, {3}, d), g = Tensor::from_vector<float>({10, 20, 30}, {3}, d);
    sgd_update(w, g, 0.5f);
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{-4, -8, -12})) << d.name();
    gradient_accumulate(w, g);
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{6, 12, 18})) << d.name();
    gradient_scale(w, 0.5f);
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{3, 6, 9})) << d.name();
    // In place through a view: the storage changes.
    Tensor view = w.reshape({1, 3});
    gradient_scale(view, 2.0f);
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{6, 12, 18})) << d.name();
  }
}

TEST(TrainParity, AdamWUpdateDelegates) {
  AdamParams ap{1e-2, 0.8, 0.95, 1e-6, 0.1, 3};
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor w = random_tensor({129}, 1).to(d), g = random_tensor({129}, 2).to(d);
    Tensor m = random_tensor({129}, 3, 0, 0.1f).to(d), v = random_tensor({129}, 4, 0, 0.1f).to(d);
    Tensor w2 = w.clone(), m2 = m.clone(), v2 = v.clone();
    adamw_update(w, g, m, v, ap);
    adamw(w2, g, m2, v2, ap.lr, ap.beta1, ap.beta2, ap.eps, ap.weight_decay, ap.step);
    // The same op underneath: bitwise equal.
    EXPECT_TRUE(all_close(w, w2, 0, 0)) << d.name();
    EXPECT_TRUE(all_close(m, m2, 0, 0)) << d.name();
    EXPECT_TRUE(all_close(v, v2, 0, 0)) << d.name();
  }
  Tensor w = random_tensor({3}, 1);
  AdamParams bad;
  bad.step = 0;
  expect_error<ValueError>("adamw", [&] { adamw_update(w, w, w, w, bad); });
}

TEST(TrainParity, MseLoss) {
  uint32_t seed = 100;
  for (const Shape& s : kShapes) {
    Tensor p = random_tensor(s, seed++), t = random_tensor(s, seed++);
    // A difference, a square and a halving: exact on both.
    EXPECT_TRUE(cpu_gpu_parity({p, t}, [](auto& x) { return mse_loss(x[0], x[1]); }, 0, 0)) << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({p, t}, [](auto& x) { return mse_loss_backward(x[0], x[1]); }, 0, 0)) << shape_str(s);
  }
  Tensor p = Tensor::from_vector<float>({3, -1}, {2}), t = Tensor::from_vector<float>({1, 1}, {2});
  EXPECT_EQ(mse_loss(p, t).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(mse_loss_backward(p, t).to_vector<float>(), (std::vector<float>{2, -2}));
}

TEST(TrainParity, CrossEntropy) {
  uint32_t seed = 200;
  for (auto [rows, v] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 3}, {3, 17}, {17, 129}, {5, 1000}}) {
    std::vector<float> logits = random_values(rows * v, seed++, -4.0f, 4.0f);
    std::vector<uint32_t> ids(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) ids[r] = uint32_t((r * 7 + 3) % v);
    Tensor l = Tensor::from_vector(logits, {rows, v}), t = Tensor::from_vector(ids, {rows});
    // Reference in double: logsumexp - logit[target]; softmax - onehot.
    std::vector<float> want_loss(static_cast<size_t>(rows)), want_grad(static_cast<size_t>(rows * v));
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -1e30, sum = 0;
      for (int64_t j = 0; j < v; ++j) mx = std::max(mx, double(logits[r * v + j]));
      for (int64_t j = 0; j < v; ++j) sum += std::exp(double(logits[r * v + j]) - mx);
      want_loss[r] = float(mx + std::log(sum) - logits[r * v + ids[r]]);
      for (int64_t j = 0; j < v; ++j)
        want_grad[r * v + j] = float(std::exp(double(logits[r * v + j]) - mx) / sum - (j == int64_t(ids[r]) ? 1 : 0));
    }
    for (const Device& d : {Device::cpu(), gpu_device()}) {
      // -log of an f32 probability: 2e-6 absolute plus 1e-5 relative for
      // losses up to ~15; gradients (probabilities) 1e-6 absolute.
      EXPECT_TRUE(all_close(cross_entropy_loss(l.to(d), t.to(d)).to_vector<float>(), want_loss, 2e-6, 1e-5))
          << rows << "x" << v << " " << d.name();
      EXPECT_TRUE(all_close(cross_entropy_loss_backward(l.to(d), t.to(d)).to_vector<float>(), want_grad, 1e-6, 1e-5))
          << rows << "x" << v << " " << d.name();
    }
  }
  // The single-vector case: logits [V], one target.
  Tensor l = Tensor::from_vector<float>({0, 0, std::log(2.0f)}, {3});
  Tensor t = Tensor::from_vector<int32_t>({2}, {1});
  EXPECT_NEAR(cross_entropy_loss(l, t).to_vector<float>()[0], std::log(2.0f), 1e-6);
  Tensor g = cross_entropy_loss_backward(l, t, 2.0f);
  EXPECT_EQ(g.shape(), (Shape{3}));
  EXPECT_TRUE(all_close(g.to_vector<float>(), {0.5f, 0.5f, -1.0f}, 1e-6, 0));
}

TEST(TrainParity, GradientNormAndClip) {
  uint32_t seed = 300;
  std::vector<Tensor> grads{random_tensor({129}, seed++), random_tensor({3, 17}, seed++), random_tensor({1}, seed++)};
  double want = 0;
  for (const Tensor& g : grads)
    for (float v : g.to_vector<float>()) want += double(v) * v;
  std::vector<Tensor> on_gpu;
  for (const Tensor& g : grads) on_gpu.push_back(g.to(gpu_device()));
  // f32 partial sums of <= 129 squares: 1e-5 relative.
  EXPECT_NEAR(gradient_norm_squared(grads).to_vector<float>()[0], want, 1e-5 * want);
  Tensor ns = gradient_norm_squared(on_gpu);
  EXPECT_TRUE(ns.device().is_webgpu());
  EXPECT_NEAR(ns.to_vector<float>()[0], want, 1e-5 * want);
  for (float max_norm : {0.5f, 1e6f}) {
    // coef = min(1, max_norm / (norm + 1e-6)); the GPU's sqrt and divide may
    // differ by an ulp: 1e-6 relative.
    float coef = std::min(1.0f, max_norm / (std::sqrt(float(want)) + 1e-6f));
    for (const Device& d : {Device::cpu(), gpu_device()}) {
      Tensor g = grads[0].clone().to(d);
      Tensor n = Tensor::from_vector<float>({float(want)}, {1}, d);
      clip_grad_by_norm(g, n, max_norm);
      std::vector<float> expect = grads[0].to_vector<float>();
      for (auto& e : expect) e *= coef;
      EXPECT_TRUE(all_close(g.to_vector<float>(), expect, 1e-9, 1e-6)) << max_norm << " " << d.name();
    }
  }
}

TEST(TrainParity, CopyTensor) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor dst = Tensor::zeros({4, 5}, DType::F32, d);
    Tensor src = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7}, {7}, d);
    copy_tensor(src, dst, 3);
    std::vector<float> want(20, 0.0f);
    for (int i = 0; i < 7; ++i) want[3 + i] = float(i + 1);
    EXPECT_EQ(dst.to_vector<float>(), want) << d.name();
    Tensor ids = Tensor::zeros({3}, DType::U32, d);
    copy_tensor(Tensor::from_vector<uint32_t>({9}, {1}, d), ids, 2);
    EXPECT_EQ(ids.to_vector<uint32_t>(), (std::vector<uint32_t>{0, 0, 9})) << d.name();
    expect_error<ShapeError>("copy_tensor", [&] { copy_tensor(src, dst, 14); }, "f32[4, 5]");
    expect_error<DTypeError>("copy_tensor", [&] { copy_tensor(src, ids, 0); });
  }
  Tensor h = Tensor::zeros({4}, DType::BF16, gpu_device());
  expect_error<DeviceError>("copy_tensor", [&] { copy_tensor(Tensor::zeros({1}, DType::BF16, gpu_device()), h, 1); });
}

TEST(TrainChunked, ElementwiseUnderLoweredLimit) {
  // 5000 elements under a 1 KiB limit: 20 dispatches of 256.
  Tensor w = random_tensor({5000}, 1), g = random_tensor({5000}, 2);
  Tensor n = Tensor::from_vector<float>({400.0f}, {1});
  LoweredBindingLimit limit(1024);
  // w - lr * g: a GPU may contract it into one fma (seen on an NVIDIA H200),
  // which skips the rounding of lr * g: the results differ by up to half an
  // ulp of lr * g (|lr * g| <= 0.1 here: under 1e-8), which is many ulps
  // of the result where w and lr * g nearly cancel.
  EXPECT_TRUE(cpu_gpu_parity({w, g}, [](auto& t) { Tensor y = t[0].clone(); sgd_update(y, t[1], 0.1f); return y; },
                             2e-8, 2.5e-7));
  EXPECT_TRUE(cpu_gpu_parity({w, g}, [](auto& t) { Tensor y = t[0].clone(); gradient_accumulate(y, t[1]); return y; },
                             0, 0));
  EXPECT_TRUE(cpu_gpu_parity({w}, [](auto& t) { Tensor y = t[0].clone(); gradient_scale(y, 3.0f); return y; }, 0, 0));
  auto clip = [](auto& t) {
    Tensor y = t[0].clone();
    clip_grad_by_norm(y, t[1], 2.0f);
    return y;
  };
  EXPECT_TRUE(cpu_gpu_parity({w, n}, clip, 1e-9, 1e-6));
  EXPECT_TRUE(cpu_gpu_parity({w, g}, [](auto& t) { return mse_loss(t[0], t[1]); }, 0, 0));
}

TEST(TrainValidation, Errors) {
  Tensor a = random_tensor({3, 4}, 1), b = random_tensor({4, 3}, 2);
  expect_error<ShapeError>("sgd_update", [&] { sgd_update(a, b, 0.1f); }, "f32[4, 3]");
  expect_error<ShapeError>("gradient_accumulate", [&] { gradient_accumulate(a, b); });
  expect_error<ShapeError>("mse_loss", [&] { mse_loss(a, b); });
  expect_error<ShapeError>("mse_loss_backward", [&] { mse_loss_backward(a, b); });
  expect_error<ShapeError>("cross_entropy_loss", [&] { cross_entropy_loss(a, Tensor::zeros({4}, DType::U32)); },
                           "f32[3, 4]");
  expect_error<DTypeError>("cross_entropy_loss_backward",
                           [&] { cross_entropy_loss_backward(a, random_tensor({3}, 3)); });
  expect_error<ValueError>("clip_grad_by_norm", [&] { clip_grad_by_norm(a, random_tensor({1}, 4), 0.0f); });
  expect_error<ShapeError>("clip_grad_by_norm", [&] { clip_grad_by_norm(a, random_tensor({2}, 4), 1.0f); });
  expect_error<DeviceError>("gradient_accumulate", [&] { gradient_accumulate(a, a.to(gpu_device())); });
  expect_error<ValueError>("gradient_norm_squared", [&] { gradient_norm_squared({}); });
}

}  // namespace

TEST(TrainParity, ClipGradByFactor) {
  // The factor form scales in place on both devices: one multiplication, exact.
  Tensor g = random_tensor({3, 17}, 41);
  EXPECT_TRUE(cpu_gpu_parity({g}, [](auto& t) { Tensor y = t[0].clone(); clip_grad_by_norm(y, 0.25f); return y; },
                             0, 0));
  Tensor h = Tensor::from_vector<float>({2, -4}, {2});
  clip_grad_by_norm(h, 0.5f);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1, -2}));
  try {
    clip_grad_by_norm(h, 1.5f);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[clip_grad_by_norm]"), std::string::npos) << e.what();
  }
}
