// Host tensor memory: small blocks 64-byte aligned, large ones on whole
// 2 MiB pages advised as huge (where Linux has transparent huge pages) and
// kept for reuse, and tensors of every size usable end to end.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/host_heap.h"
#include "forge/tensor.h"

using namespace forge;

constexpr size_t kHugePage = size_t(2) << 20;

TEST(HostMemory, SmallBlocksAre64ByteAligned) {
  for (size_t bytes : {size_t(1), size_t(63), size_t(4096), kHugePage - 1}) {
    std::byte* p = allocate_host_bytes(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, bytes);
    release_host_bytes(p, bytes);
  }
}

TEST(HostMemory, LargeBlocksStartOnAHugePage) {
  const size_t bytes = 3 * kHugePage + 123;
  std::byte* p = allocate_host_bytes(bytes);
  ASSERT_NE(p, nullptr);
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u);
#endif
  std::memset(p, 1, bytes);
  EXPECT_EQ(p[bytes - 1], std::byte{1});
  release_host_bytes(p, bytes);
}

// A large block released is the next block of its size (no fresh pages to
// fault and zero), and a zeroed tensor on it holds zeros, not the old values.
TEST(HostMemory, LargeBlocksAreReusedAndZeroedTensorsStayZero) {
  const size_t bytes = 5 * kHugePage + 40;
  std::byte* p = allocate_host_bytes(bytes);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0x7f, bytes);
  release_host_bytes(p, bytes);
  std::byte* q = allocate_host_bytes(bytes - 8);  // rounds to the same huge pages
  EXPECT_EQ(q, p);
  release_host_bytes(q, bytes - 8);
  const int64_t n = int64_t(bytes / 4);
  {
    Tensor full = Tensor::empty({n}, DType::F32, Device::cpu());
    float* f = full.data<float>();
    for (int64_t i = 0; i < n; ++i) f[i] = 3.5f;
  }
  Tensor zeros = Tensor::zeros({n}, DType::F32, Device::cpu());
  const float* z = zeros.data<float>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(z[i], 0.0f) << i;
}

TEST(HostMemory, TensorsOfEverySizeKeepTheirValues) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1000), int64_t(kHugePage / 4 + 17)}) {
    Tensor t = Tensor::zeros({n}, DType::F32, Device::cpu());
    float* d = t.data<float>();
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(d[i], 0.0f) << i;
    for (int64_t i = 0; i < n; ++i) d[i] = float(i);
    auto v = t.to_f32();
    ASSERT_EQ(int64_t(v.size()), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[size_t(i)], float(i));
  }
}
