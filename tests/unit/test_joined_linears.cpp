// Linears whose weights share one storage (join_weights): the products and
// the backward over the joined rows against one Linear at a time, and the
// Llama loader joining q/k/v and gate/up.
#include <gtest/gtest.h>

#include "forge/model.h"
#include "forge/ops.h"
#include "models/common/train_head.h"
#include "models/common/weights.h"
#include "models/llama/llama.h"
#include "parity/parity.h"
#include "unit/dense_linear.h"

using namespace forge;
using namespace forge::models;
using forge::testing::all_close;
using forge::testing::dense_linear;
using forge::testing::random_tensor;
using forge::testing::test_devices;

TEST(JoinedLinears, ForwardAndBackwardEqualOneLinearAtATime) {
  const int64_t N = 19, K = 64;
  uint32_t seed = 40;
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    const Tensor x = random_tensor({N, K}, seed++).to(dev);
    std::vector<Linear> sep, joint;
    for (int64_t out : {32, 16, 16}) sep.push_back(dense_linear(random_tensor({out, K}, seed++).to(dev)));
    for (const Linear& l : sep) joint.push_back(dense_linear(l.w.clone()));
    join_weights({&joint[0], &joint[1], &joint[2]});
    ASSERT_TRUE(Tensor::joined_rows({joint[0].w, joint[1].w, joint[2].w}).defined());
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(all_close(joint[i].w, sep[i].w, 0, 0)) << "weights kept, " << i;

    const std::vector<Tensor> ys = apply_all({&joint[0], &joint[1], &joint[2]}, x);
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(all_close(ys[i], sep[i](x), 1e-5, 1e-5)) << "forward " << i;

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
    }
    // And against the plain products: dx = sum dy_i W_i, dW_i = 2 dy_i^T x.
    Tensor want = matmul_nn(dys[0], sep[0].w);
    for (size_t i = 1; i < 3; ++i) want = add(want, matmul_nn(dys[i], sep[i].w));
    EXPECT_TRUE(all_close(dx_joint, want, 1e-5, 1e-5));
    EXPECT_TRUE(all_close(gj[1].w, scale(matmul_tn(dys[1], x), 2.0f), 1e-5, 1e-5));
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
}

TEST(JoinedLinears, LlamaLoaderJoinsQkvAndGateUp) {
  for (const Device& dev : test_devices()) {
    auto m = load_model(std::string(FORGE_TEST_DATA) + "/llama-tiny", dev);
    auto* llama = dynamic_cast<LlamaModel*>(m.get());
    ASSERT_NE(llama, nullptr);
    for (const LlamaLayer& y : llama->layers()) {
      EXPECT_TRUE(Tensor::joined_rows({y.q.w, y.k.w, y.v.w}).defined()) << dev.name();
      EXPECT_TRUE(Tensor::joined_rows({y.gate.w, y.up.w}).defined()) << dev.name();
    }
  }
}
