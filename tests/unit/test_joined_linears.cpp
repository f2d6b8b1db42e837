// Linears whose weights (and biases) share one storage (join_weights): the
// products and the backward over the joined rows against one Linear at a
// time, and the Llama loader joining q/k/v and gate/up.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "forge/model.h"
#include "forge/ops.h"
#include "models/common/train_head.h"
#include "models/common/weights.h"
#include "models/llama/llama.h"
#include "parity/parity.h"
#include "unit/dense_linear.h"
#include "unit/this_build.h"

using namespace forge;
using namespace forge::models;
using forge::testing::all_close;
using forge::testing::dense_linear;
using forge::testing::random_tensor;
using forge::testing::test_devices;

namespace {

// Three Linears joined against the same three apart: the forward (plain and
// with a row norm), and two micro-batches of the backward. With biases, the
// widths are multiples of 64 floats, so that the biases join too.
void check_joined_against_separate(bool with_bias) {
  const int64_t N = 19, K = 64;
  const std::vector<int64_t> outs = with_bias ? std::vector<int64_t>{128, 64, 64} : std::vector<int64_t>{32, 16, 16};
  uint32_t seed = 40;
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name() + (with_bias ? " with biases" : ""));
    const Tensor x = random_tensor({N, K}, seed++).to(dev);
    std::vector<Linear> sep, joint;
    for (int64_t out : outs) {
      sep.push_back(dense_linear(random_tensor({out, K}, seed++).to(dev)));
      if (with_bias) sep.back().bias = random_tensor({out}, seed++).to(dev);
    }
    for (const Linear& l : sep) {
      joint.push_back(dense_linear(l.w.clone()));
      if (with_bias) joint.back().bias = l.bias.clone();
    }
    join_weights({&joint[0], &joint[1], &joint[2]});
    ASSERT_TRUE(Tensor::joined_rows({joint[0].w, joint[1].w, joint[2].w}).defined());
    if (with_bias) ASSERT_TRUE(Tensor::joined_rows({joint[0].bias, joint[1].bias, joint[2].bias}).defined());
    ASSERT_TRUE(joined_linears({&joint[0], &joint[1], &joint[2]}).has_value());
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(all_close(joint[i].w, sep[i].w, 0, 0)) << "weights kept, " << i;
      if (with_bias) EXPECT_TRUE(all_close(joint[i].bias, sep[i].bias, 0, 0)) << "biases kept, " << i;
    }

    const std::vector<Tensor> ys = apply_all({&joint[0], &joint[1], &joint[2]}, x);
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(all_close(ys[i], sep[i](x), 1e-5, 1e-5)) << "forward " << i;
    const Tensor norm_w = random_tensor({K}, seed++).to(dev);
    const RowNorm n{&norm_w, 1e-5f};
    const std::vector<Tensor> normed = apply_all({&joint[0], &joint[1], &joint[2]}, x, &n);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(all_close(normed[i], sep[i](row_norm(x, n)), 1e-5, 1e-5)) << "forward with a norm " << i;

    std::vector<Tensor> dys;
    for (const Linear& l : sep) dys.push_back(random_tensor({N, l.out}, seed++).to(dev));
    // Twice, as micro-batches accumulate: the second adds into the first's views.
    std::vector<Linear> gs(3), gj(3);
    Tensor dx_sep, dx_joint;
    for (int round = 0; round < 2; ++round) {
      dx_sep = linears_backward({&sep[0], &sep[1], &sep[2]}, x, dys, {&gs[0], &gs[1], &gs[2]}, false);
      dx_joint = linears_backward({&joint[0], &joint[1], &joint[2]}, x, dys, {&gj[0], &gj[1], &gj[2]}, false);
    }
    EXPECT_TRUE(all_close(dx_joint, dx_sep, 1e-5, 1e-5));
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(gj[i].w.shape(), sep[i].w.shape());
      EXPECT_TRUE(all_close(gj[i].w, gs[i].w, 1e-5, 1e-5)) << "dW " << i;
      EXPECT_EQ(gj[i].bias.defined(), with_bias) << i;
      if (with_bias) EXPECT_TRUE(all_close(gj[i].bias, gs[i].bias, 1e-5, 1e-5)) << "db " << i;
    }
    // And against the plain products: dx = sum dy_i W_i, dW_i = 2 dy_i^T x,
    // db_i = 2 sum_rows(dy_i).
    Tensor want = matmul_nn(dys[0], sep[0].w);
    for (size_t i = 1; i < 3; ++i) want = add(want, matmul_nn(dys[i], sep[i].w));
    EXPECT_TRUE(all_close(dx_joint, want, 1e-5, 1e-5));
    EXPECT_TRUE(all_close(gj[1].w, scale(matmul_tn(dys[1], x), 2.0f), 1e-5, 1e-5));
    if (with_bias) EXPECT_TRUE(all_close(gj[2].bias, scale(sum_rows(dys[2]), 2.0f), 1e-5, 1e-5));
  }
}

}  // namespace

TEST(JoinedLinears, ForwardAndBackwardEqualOneLinearAtATime) { check_joined_against_separate(false); }

TEST(JoinedLinears, WithBiasesForwardAndBackwardEqualOneLinearAtATime) { check_joined_against_separate(true); }

TEST(JoinedLinears, GatedMlpWithBiasesTakesOneProduct) {
  const int64_t N = 7, K = 64, I = 64;
  uint32_t seed = 90;
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    const Tensor x = random_tensor({N, K}, seed++).to(dev);
    Linear gate = dense_linear(random_tensor({I, K}, seed++).to(dev)), up = dense_linear(random_tensor({I, K}, seed++).to(dev));
    gate.bias = random_tensor({I}, seed++).to(dev);
    up.bias = random_tensor({I}, seed++).to(dev);
    const Tensor want = silu_gate_fused(gate(x), up(x));
    join_weights({&gate, &up});
    ASSERT_TRUE(Tensor::joined_rows({gate.bias, up.bias}).defined());
    ASSERT_TRUE(joined_product({&gate, &up}, x).defined());
    EXPECT_TRUE(all_close(silu_gate_of(gate, up, x), want, 1e-5, 1e-5));
  }
}

TEST(JoinedLinears, LeftSeparateWhereAViewCouldNotBeBound) {
  // 3 x 5 f32 is 60 bytes: a view after it would not start on a 256-byte boundary.
  Linear a = dense_linear(random_tensor({3, 5}, 1)), b = dense_linear(random_tensor({4, 5}, 2));
  join_weights({&a, &b});
  EXPECT_FALSE(Tensor::joined_rows({a.w, b.w}).defined());
  // Different widths: left alone.
  Linear c = dense_linear(random_tensor({64, 64}, 3)), d = dense_linear(random_tensor({64, 32}, 4));
  join_weights({&c, &d});
  EXPECT_FALSE(Tensor::joined_rows({c.w, d.w}).defined());
  // Biases of 32 floats (128 bytes): the weights join, the biases do not, so
  // no product takes them together.
  Linear e = dense_linear(random_tensor({32, 64}, 5)), f = dense_linear(random_tensor({32, 64}, 6));
  e.bias = random_tensor({32}, 7);
  f.bias = random_tensor({32}, 8);
  join_weights({&e, &f});
  EXPECT_TRUE(Tensor::joined_rows({e.w, f.w}).defined());
  EXPECT_FALSE(Tensor::joined_rows({e.bias, f.bias}).defined());
  EXPECT_FALSE(joined_linears({&e, &f}).has_value());
  const Tensor x = random_tensor({5, 64}, 9);
  const std::vector<Tensor> ys = apply_all({&e, &f}, x);
  EXPECT_TRUE(all_close(ys[1], f(x), 1e-5, 1e-5));
  // A bias on one Linear only: the weights join, one product cannot add it.
  Linear g = dense_linear(random_tensor({64, 64}, 10)), h = dense_linear(random_tensor({64, 64}, 11));
  g.bias = random_tensor({64}, 12);
  join_weights({&g, &h});
  EXPECT_TRUE(Tensor::joined_rows({g.w, h.w}).defined());
  EXPECT_FALSE(joined_linears({&g, &h}).has_value());
  EXPECT_FALSE(joined_product({&g, &h}, x).defined());
}

namespace {

// Loads tests/fixtures/<fixture> on every test device and checks each layer.
void for_each_loaded_layer(const std::string& fixture, const std::function<void(const LlamaLayer&)>& check) {
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    auto m = load_model(std::string(forge::testing::test_data_dir()) + "/" + fixture, dev);
    auto* llama = dynamic_cast<LlamaModel*>(m.get());
    ASSERT_NE(llama, nullptr);
    for (const LlamaLayer& y : llama->layers()) check(y);
  }
}

}  // namespace

TEST(JoinedLinears, LlamaLoaderJoinsQkvAndGateUp) {
  for_each_loaded_layer("llama-tiny", [](const LlamaLayer& y) {
    EXPECT_TRUE(Tensor::joined_rows({y.q.w, y.k.w, y.v.w}).defined());
    EXPECT_TRUE(Tensor::joined_rows({y.gate.w, y.up.w}).defined());
  });
}

TEST(JoinedLinears, Qwen2LoaderJoinsTheQkvBiases) {
  for_each_loaded_layer("qwen2-tiny", [](const LlamaLayer& y) {
    ASSERT_TRUE(y.q.bias.defined() && y.k.bias.defined() && y.v.bias.defined());
    EXPECT_TRUE(Tensor::joined_rows({y.q.bias, y.k.bias, y.v.bias}).defined());
    EXPECT_TRUE(joined_linears({&y.q, &y.k, &y.v}).has_value());
  });
}
