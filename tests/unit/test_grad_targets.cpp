// Gradients written where the optimizer reads them: MatmulOptions::out and
// the chunked head's dchunks_into write a product into a view of a larger
// storage, and under GradTargets a backward pass puts each slot's first
// gradient into its view (joined weights' gradients into back-to-back views
// at once), adding later ones there.
#include <gtest/gtest.h>

#include "forge/ops.h"
#include "models/common/grad_targets.h"
#include "models/common/weights.h"
#include "parity/parity.h"
#include "unit/dense_linear.h"

using namespace forge;
using namespace forge::models;
using namespace forge::testing;

namespace {

// A view of `shape` at element `at` of the flat f32 `page`.
Tensor view_at(const Tensor& page, int64_t at, const Shape& shape) {
  return page.slice_rows(at, at + numel(shape)).reshape(shape);
}

}  // namespace

TEST(GradTargets, MatmulWritesIntoAViewOfALargerStorage) {
  uint32_t seed = 7;
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    const Tensor a = random_tensor({37, 24}, seed++).to(dev), b = random_tensor({37, 20}, seed++).to(dev);
    MatmulOptions tn;
    tn.transpose_a = true;
    const Tensor want = matmul(a, b, tn);  // [24, 20]
    Tensor page = Tensor::zeros({64 + 24 * 20 + 64}, DType::F32, dev);
    Tensor into = view_at(page, 64, {24, 20});
    tn.out = &into;
    const Tensor got = matmul(a, b, tn);
    EXPECT_TRUE(same_place(got, into));
    EXPECT_TRUE(all_close(into, want, 1e-5, 1e-5));
    // Nothing around the view is touched.
    const std::vector<float> all = page.to_vector<float>();
    for (int64_t i : {int64_t(0), int64_t(63), int64_t(64 + 24 * 20), int64_t(all.size() - 1)})
      EXPECT_EQ(all[size_t(i)], 0.0f) << i;

    Tensor wrong = view_at(page, 64, {20, 24});
    tn.out = &wrong;
    EXPECT_THROW(matmul(a, b, tn), ShapeError);
    Tensor inside_a = a.reshape({37 * 24}).slice_rows(0, 24 * 20).reshape({24, 20});
    tn.out = &inside_a;
    EXPECT_THROW(matmul(a, b, tn), ValueError);
    tn.out = &into;
    tn.gelu = true;
    EXPECT_THROW(matmul(a, b, tn), ValueError);
  }
}

TEST(GradTargets, ChunkedHeadGradientsGoIntoTheirViews) {
  uint32_t seed = 30;
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    const Tensor x = random_tensor({9, 16}, seed++).to(dev);
    const std::vector<Tensor> chunks = {random_tensor({12, 16}, seed++).to(dev), random_tensor({7, 16}, seed++).to(dev)};
    const Tensor dout = random_tensor({9, 19}, seed++).to(dev);
    const ChunkedTransbGrads want = matmul_chunked_transb_backward(dout, x, chunks);
    Tensor page = Tensor::zeros({64 + 12 * 16 + 64}, DType::F32, dev);
    const std::vector<Tensor> into = {view_at(page, 64, {12, 16}), Tensor()};  // the second: a new tensor
    const ChunkedTransbGrads got = matmul_chunked_transb_backward(dout, x, chunks, 1.0f, &into);
    EXPECT_TRUE(same_place(got.dchunks[0], into[0]));
    EXPECT_FALSE(got.dchunks[1].storage_id() == page.storage_id());
    for (size_t c = 0; c < 2; ++c) EXPECT_TRUE(all_close(got.dchunks[c], want.dchunks[c], 1e-5, 1e-5)) << c;
    EXPECT_TRUE(all_close(got.da, want.da, 1e-5, 1e-5));
    const std::vector<Tensor> one = {into[0]};
    EXPECT_THROW(matmul_chunked_transb_backward(dout, x, chunks, 1.0f, &one), ShapeError);
  }
}

TEST(GradTargets, FirstGradientsLandInTheirViewsAndLaterOnesAddThere) {
  const int64_t N = 21, K = 32;
  uint32_t seed = 60;
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    const Tensor x = random_tensor({N, K}, seed++).to(dev);
    // Three linears with weights joined in one storage (q/k/v), and one alone.
    std::vector<Linear> joint;
    for (int64_t out : {32, 16, 16}) joint.push_back(dense_linear(random_tensor({out, K}, seed++).to(dev)));
    join_weights({&joint[0], &joint[1], &joint[2]});
    const Linear alone = dense_linear(random_tensor({24, K}, seed++).to(dev));
    std::vector<Tensor> dys;
    for (const Linear& l : joint) dys.push_back(random_tensor({N, l.out}, seed++).to(dev));
    const Tensor dy_alone = random_tensor({N, 24}, seed++).to(dev);

    // The reference: fresh tensors, no targets.
    std::vector<Linear> ref(3);
    Linear ref_alone;
    linears_backward({&joint[0], &joint[1], &joint[2]}, x, dys, {&ref[0], &ref[1], &ref[2]}, false);
    linear_backward(alone, x, dy_alone, ref_alone, false);

    // A page as the optimizer lays it out: the joined weights' gradients back
    // to back, then the lone one; a stale value everywhere.
    const int64_t joined = 64 * K, total = joined + 64 + 24 * K;
    Tensor page = Tensor::from_vector(std::vector<float>(size_t(total), 123.0f), {total}).to(dev);
    const std::vector<Tensor> views = {view_at(page, 0, {32, K}), view_at(page, 32 * K, {16, K}),
                                       view_at(page, 48 * K, {16, K}), view_at(page, joined + 64, {24, K})};
    std::vector<Linear> gs(3);
    Linear g_alone;
    Tensor bias_slot;  // a slot the scope does not know keeps a fresh tensor
    {
      GradTargets scope({&gs[0].w, &gs[1].w, &gs[2].w, &g_alone.w}, views);
      for (int round = 0; round < 2; ++round) {  // micro-batches: the second adds into the first
        linears_backward({&joint[0], &joint[1], &joint[2]}, x, dys, {&gs[0], &gs[1], &gs[2]}, false);
        linear_backward(alone, x, dy_alone, g_alone, false);
        accumulate_grad(bias_slot, sum_rows(dy_alone));
      }
    }
    EXPECT_EQ(GradTargets::find(gs[0].w), nullptr) << "the scope has ended";
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(same_place(gs[i].w, views[i])) << i;
      EXPECT_TRUE(all_close(gs[i].w, scale(ref[i].w, 2.0f), 1e-5, 1e-5)) << i;
    }
    EXPECT_TRUE(same_place(g_alone.w, views[3]));
    EXPECT_TRUE(all_close(g_alone.w, scale(ref_alone.w, 2.0f), 1e-5, 1e-5));
    EXPECT_NE(bias_slot.storage_id(), page.storage_id());
    EXPECT_TRUE(all_close(bias_slot, scale(sum_rows(dy_alone), 2.0f), 1e-5, 1e-5));
    EXPECT_EQ(page.to_vector<float>()[size_t(joined + 10)], 123.0f) << "the gap between the views is left alone";
  }
}

TEST(GradTargets, APlainGradientIsCopiedIntoItsViewAndAMismatchIsAnError) {
  const Device dev = Device::cpu();
  Tensor page = Tensor::zeros({128}, DType::F32, dev);
  Tensor slot, other;
  const Tensor g = random_tensor({4, 8}, 3);
  GradTargets scope({&slot, &other}, {view_at(page, 0, {4, 8}), view_at(page, 64, {2, 8})});
  accumulate_grad(slot, g);
  EXPECT_TRUE(same_place(slot, page));
  EXPECT_TRUE(all_close(slot, g, 0, 0));
  EXPECT_THROW(accumulate_grad(other, g), ShapeError);
  Tensor a, b;
  EXPECT_THROW(GradTargets({&a, &b}, {page}), ValueError);
}
