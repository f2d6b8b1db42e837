// The WebGPU runtime: sync points, batching, pooling, error surfacing, limits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "forge/ops.h"
#include "gpu/runtime.h"
#include "parity/parity.h"

using namespace forge;
using forge::testing::gpu_device;

TEST(WebGpuRuntime, SyncWithNothingRecordedReturns) {
  gpu_device().runtime().sync();
  gpu_device().runtime().sync();
  SUCCEED();
}

TEST(WebGpuRuntime, SyncAfterWorkAndReadBack) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, gpu_device());
  Tensor b = scale(a, 2.0f);
  gpu_device().runtime().sync();
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
}

TEST(WebGpuRuntime, ManyOpsInOneBatchStayOrdered) {
  // 600 dependent dispatches overflow the parameter arena several times.
  Tensor x = Tensor::from_vector<float>({1}, {1}, gpu_device());
  Tensor one = Tensor::from_vector<float>({1}, {1}, gpu_device());
  for (int i = 0; i < 600; ++i) x = add(x, one);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>{601});
}

TEST(WebGpuRuntime, UploadAfterRecordedReadKeepsOrder) {
  // b reads a's buffer; a is then freed and its buffer reused by an upload.
  Tensor b;
  {
    Tensor a = Tensor::from_vector<float>({5, 6}, {2}, gpu_device());
    b = scale(a, 1.0f);
  }
  Tensor c = Tensor::from_vector<float>({7, 8}, {2}, gpu_device());
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{7, 8}));
}

// Reads started with work recorded after them (the pipelined decode's
// pattern) give each tensor's value, finish in any order, and a read dropped
// unfinished waits for itself; finishing twice is an error.
TEST(WebGpuRuntime, StartedDownloadsOverlapLaterWork) {
  gpu::Runtime& rt = gpu_device().runtime();
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, gpu_device());
  auto first = rt.start_download(x.buffer(), x.byte_offset(), 8);
  Tensor y = add(x, x);  // recorded and submitted after the first read's copy
  auto second = rt.start_download(y.buffer(), y.byte_offset(), 8);
  { auto dropped = rt.start_download(y.buffer(), y.byte_offset(), 4); }
  float got2[2] = {0, 0}, got1[2] = {0, 0};
  second->finish(got2);
  first->finish(got1);
  EXPECT_EQ(got1[0], 1.0f);
  EXPECT_EQ(got1[1], 2.0f);
  EXPECT_EQ(got2[0], 2.0f);
  EXPECT_EQ(got2[1], 4.0f);
  EXPECT_THROW(first->finish(got1), GpuError);  // once only
}

// Subgroup sums (AdapterInfo::subgroup_size) only where the adapter has the
// feature and one subgroup size; SwiftShader's subgroups of 4 pass the
// probe, so the suite runs the kernels' subgroup form there.
TEST(WebGpuRuntime, SubgroupSumsFollowTheProbe) {
  const gpu::Runtime& rt = gpu_device().runtime();
  const gpu::AdapterInfo& a = rt.adapter();
  if (a.subgroup_size != 0) {
    EXPECT_TRUE(a.subgroups);
    EXPECT_EQ(rt.limits().subgroup_min, a.subgroup_size);
    EXPECT_EQ(rt.limits().subgroup_max, a.subgroup_size);
    EXPECT_EQ(256 % a.subgroup_size, 0u);
    EXPECT_GE(a.subgroup_size, 4u);
  }
  const char* off = std::getenv("FORGE_SUBGROUPS");
  if (a.name.find("SwiftShader") != std::string::npos && !(off && std::string(off) == "0"))
    EXPECT_EQ(a.subgroup_size, 4u) << "the SwiftShader probe";
}

TEST(WebGpuRuntime, OddByteSizesRoundTrip) {
  std::vector<uint8_t> bytes{1, 2, 3, 4, 5, 6, 7};
  Tensor t = Tensor::from_vector(bytes, {7}, gpu_device());
  EXPECT_EQ(t.to_vector<uint8_t>(), bytes);
  Tensor i64 = Tensor::from_vector<int64_t>({-1, 1LL << 40}, {2}, gpu_device());
  EXPECT_EQ(i64.to(Device::cpu()).to_vector<int64_t>(), (std::vector<int64_t>{-1, 1LL << 40}));
}

TEST(WebGpuRuntime, CompileErrorNamesTheKernel) {
  static const gpu::Kernel broken{"broken", "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }"};
  gpu::Dispatch d;
  d.kernel = &broken;
  d.op = "broken_op";
  try {
    gpu_device().runtime().dispatch(d);
    FAIL() << "no error";
  } catch (const GpuError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[broken_op]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("broken"), std::string::npos) << msg;
  }
  // The device stays usable.
  EXPECT_EQ(scale(Tensor::from_vector<float>({1}, {1}, gpu_device()), 3.0f).to_vector<float>(), std::vector<float>{3});
}

TEST(WebGpuRuntime, ValidationErrorSurfacesAtTheNextSyncPoint) {
  // A dispatch whose binding is smaller than the kernel's declared minimum
  // is a validation error reported asynchronously.
  static const gpu::Kernel needs_vec4{
      "needs_vec4",
      "@group(0) @binding(1) var<storage, read_write> x: array<vec4<f32>>;\n"
      "@compute @workgroup_size(1) fn main() { x[0] = vec4<f32>(1.0); }"};
  Tensor t = Tensor::zeros({1}, DType::F32, gpu_device());
  gpu::Arg arg{&t.buffer(), 0, 4};  // 4 bytes bound, 16 needed
  gpu::Dispatch d;
  d.kernel = &needs_vec4;
  d.args = {&arg, 1};
  d.op = "tiny_binding";
  try {
    gpu_device().runtime().dispatch(d);
    gpu_device().runtime().sync();
    FAIL() << "no error";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("validation"), std::string::npos) << e.what();
  }
  EXPECT_EQ(scale(Tensor::from_vector<float>({2}, {1}, gpu_device()), 3.0f).to_vector<float>(), std::vector<float>{6});
}

TEST(WebGpuRuntime, OversizedBufferIsAClearError) {
  const auto& limits = gpu_device().runtime().limits();
  EXPECT_THROW(gpu_device().runtime().allocate(limits.max_buffer + 1), GpuError);
}

TEST(WebGpuRuntime, LimitsAreRaisedToTheAdapters) {
  const auto& l = gpu_device().runtime().limits();
  EXPECT_GE(l.max_storage_binding, 128ull << 20);  // the default is 128 MiB; adapters offer more
  EXPECT_GE(l.max_workgroup_invocations, 256u);
  EXPECT_GT(l.max_workgroups_per_dim, 0u);
  EXPECT_FALSE(gpu_device().runtime().adapter().name.empty());
}

TEST(WebGpuRuntime, BindingOverTheLimitIsRefused) {
  gpu_device().runtime().set_binding_limit_for_testing(1024);
  Tensor a = Tensor::zeros({2, 1000}, DType::F32, gpu_device());
  // matmul does not split its operands: an 8000-byte binding is refused.
  EXPECT_THROW(matmul(a, a, MatmulOptions{false, true}), GpuError);
  gpu_device().runtime().set_binding_limit_for_testing(0);
}

TEST(WebGpuRuntime, OddSizedCopyToTheDeviceKeepsNeighbours) {
  // Five bytes copied into the start of an 8-byte buffer.
  std::vector<uint8_t> all{1, 2, 3, 4, 5, 6, 7, 8};
  Tensor dst = Tensor::from_vector(all, {8}, gpu_device());
  Tensor src = Tensor::from_vector<uint8_t>({9, 9, 9, 9, 9}, {5});
  Tensor head = dst.reshape({8}).slice_rows(0, 5);
  head.copy_from(src);
  EXPECT_EQ(dst.to_vector<uint8_t>(), (std::vector<uint8_t>{9, 9, 9, 9, 9, 6, 7, 8}));
  // And a whole odd-sized tensor through to().
  Tensor odd = Tensor::from_vector<uint8_t>({1, 2, 3}, {3}).to(gpu_device());
  EXPECT_EQ(odd.to_vector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3}));
}
