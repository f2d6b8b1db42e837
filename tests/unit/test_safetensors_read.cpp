// Reading safetensors: the fixtures, every convertible dtype, the unsupported ones,
// metadata and lazy mapping.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "forge/error.h"
#include "forge/safetensors.h"
#include "test_safetensors_util.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::TempDir;

namespace {

const std::string kData = forge::testing::test_data_dir();

long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

}  // namespace

TEST(SafetensorsRead, Gpt2FixtureTensorsAndMetadata) {
  SafetensorsFile f = SafetensorsFile::open(kData + "/gpt2-tiny/model.safetensors");
  EXPECT_EQ(f.tensors().size(), 28u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  TensorView w = f.get("transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(w.dtype(), StDType::F32);
  EXPECT_EQ(w.shape(), (Shape{32, 96}));
  EXPECT_EQ(w.bytes.size(), 32u * 96u * 4u);
  std::vector<float> v = w.to_f32();
  ASSERT_EQ(v.size(), 32u * 96u);
  float first;
  std::memcpy(&first, w.bytes.data(), 4);
  EXPECT_EQ(v[0], first);
  // Offsets are sorted and tile the data section.
  uint64_t end = 0;
  for (const TensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.begin, end) << t.name;
    end = t.end;
  }
  EXPECT_THROW(f.get("transformer.h.9.attn.c_attn.weight"), IoError);
  TensorInfo foreign = f.tensors().front();  // a copy, not the file's entry
  EXPECT_THROW(f.view(foreign), ValueError);
}

TEST(SafetensorsRead, Bf16FixtureConverts) {
  SafetensorsFile f = SafetensorsFile::open(kData + "/llama-tiny/model.safetensors");
  TensorView norm = f.get("model.norm.weight");
  EXPECT_EQ(norm.dtype(), StDType::BF16);
  EXPECT_EQ(to_dtype(norm.dtype()), DType::BF16);
  std::vector<float> out(128);
  norm.to_f32(std::span<float>(out));
  uint16_t raw;
  std::memcpy(&raw, norm.bytes.data() + 2 * 5, 2);
  EXPECT_EQ(out[5], bf16_to_f32(raw));
  std::vector<float> wrong(127);
  EXPECT_THROW(norm.to_f32(std::span<float>(wrong)), ShapeError);
}

TEST(SafetensorsRead, MlxFixtureHasPackedU32AndBf16Scales) {
  SafetensorsFile f = SafetensorsFile::open(kData + "/llama-tiny-mlx8/model.safetensors");
  EXPECT_EQ(f.metadata().at("format"), "mlx");
  TensorView q = f.get("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q.dtype(), StDType::U32);
  EXPECT_EQ(q.shape(), (Shape{128, 32}));
  EXPECT_EQ(f.get("model.layers.0.self_attn.q_proj.scales").shape(), (Shape{128, 2}));
  // u32 converts by value.
  uint32_t word;
  std::memcpy(&word, q.bytes.data(), 4);
  EXPECT_EQ(q.to_f32()[0], float(word));
}

TEST(SafetensorsRead, EveryConvertibleDtype) {
  std::vector<float> f32{1.5f, -2.25f};
  std::vector<uint16_t> f16{f32_to_f16(0.5f), f32_to_f16(-3.0f)};
  std::vector<uint16_t> bf16{f32_to_bf16(1.0f), f32_to_bf16(-0.125f)};
  std::vector<int32_t> i32{-7, 9};
  std::vector<int64_t> i64{-3, int64_t(1) << 40};
  std::vector<uint32_t> u32{0, 4000000000u};
  std::vector<uint8_t> u8{0, 255};
  using forge::testing::bytes_of;
  std::vector<TensorToWrite> ts{{"f32", StDType::F32, {2}, bytes_of(f32)},   {"f16", StDType::F16, {2}, bytes_of(f16)},
                                {"bf16", StDType::BF16, {2}, bytes_of(bf16)}, {"i32", StDType::I32, {2}, bytes_of(i32)},
                                {"i64", StDType::I64, {2}, bytes_of(i64)},   {"u32", StDType::U32, {2}, bytes_of(u32)},
                                {"u8", StDType::U8, {1, 2}, bytes_of(u8)}};
  SafetensorsFile f = SafetensorsFile::from_bytes(serialize_safetensors(ts), "mem");
  EXPECT_EQ(f.get("f32").to_f32(), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(f.get("f16").to_f32(), (std::vector<float>{0.5f, -3.0f}));
  EXPECT_EQ(f.get("bf16").to_f32(), (std::vector<float>{1.0f, -0.125f}));
  EXPECT_EQ(f.get("i32").to_f32(), (std::vector<float>{-7.0f, 9.0f}));
  EXPECT_EQ(f.get("i64").to_f32(), (std::vector<float>{-3.0f, float(int64_t(1) << 40)}));
  EXPECT_EQ(f.get("u32").to_f32(), (std::vector<float>{0.0f, 4000000000.0f}));
  EXPECT_EQ(f.get("u8").to_f32(), (std::vector<float>{0.0f, 255.0f}));
  EXPECT_EQ(f.get("u8").shape(), (Shape{1, 2}));
}

TEST(SafetensorsRead, OtherFormatDtypesParseButDoNotConvert) {
  std::vector<double> f64{1.0, 2.0, 3.0};
  std::vector<uint8_t> one{1};
  std::vector<TensorToWrite> ts{{"x", StDType::F64, {3}, forge::testing::bytes_of(f64)},
                                {"flag", StDType::BOOL, {1}, forge::testing::bytes_of(one)},
                                {"f8", StDType::F8_E4M3, {1}, forge::testing::bytes_of(one)}};
  TempDir dir;
  write_safetensors(dir / "odd.safetensors", ts);
  SafetensorsFile f = SafetensorsFile::open(dir / "odd.safetensors");
  TensorView x = f.get("x");
  EXPECT_EQ(x.dtype(), StDType::F64);
  EXPECT_EQ(x.numel(), 3);
  EXPECT_FALSE(to_dtype(x.dtype()).has_value());
  try {
    x.to_f32();
    FAIL() << "F64 converted";
  } catch (const DTypeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[safetensors] unsupported dtype F64 for tensor 'x' in " + (dir / "odd.safetensors").string());
  }
  EXPECT_THROW(f.get("flag").to_f32(), DTypeError);
  EXPECT_THROW(f.get("f8").to_f32(), DTypeError);
}

TEST(SafetensorsRead, DtypeTableRoundTrips) {
  for (const char* n : {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
                        "F64", "I64", "U64"}) {
    auto t = st_dtype_from_name(n);
    ASSERT_TRUE(t.has_value()) << n;
    EXPECT_STREQ(st_dtype_name(*t), n);
    if (auto d = to_dtype(*t)) {
      EXPECT_EQ(from_dtype(*d), *t);
      EXPECT_EQ(dtype_size(*d), st_dtype_size(*t)) << n;
    }
  }
  EXPECT_FALSE(st_dtype_from_name("f32").has_value());
  EXPECT_EQ(st_dtype_size(StDType::F64), 8u);
}

// A 1 GiB sparse tensor: opening and taking a view must not read it.
TEST(SafetensorsRead, OpeningIsLazy) {
  TempDir dir;
  const uint64_t n = uint64_t(1) << 28;  // 2^28 f32 = 1 GiB
  std::string header = R"({"big":{"dtype":"F32","shape":[)" + std::to_string(n) + R"(],"data_offsets":[0,)" +
                       std::to_string(4 * n) + "]}}";
  auto head = forge::testing::raw_file(header, 0);
  auto path = dir / "big.safetensors";
  forge::testing::write_file(path, head);
  std::filesystem::resize_file(path, head.size() + 4 * n);  // sparse: no disk blocks

  long before = resident_bytes();
  SafetensorsFile f = SafetensorsFile::open(path);
  TensorView big = f.get("big");
  EXPECT_EQ(big.bytes.size(), 4 * n);
  EXPECT_EQ(big.bytes[big.bytes.size() - 1], std::byte{0});  // touches one page
  long grown = resident_bytes() - before;
  EXPECT_LT(grown, 64l << 20) << "resident memory grew by " << grown << " bytes";
}
