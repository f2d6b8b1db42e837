// Writing safetensors: round trips, the byte layout of the header, atomic replace.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>

#include "forge/error.h"
#include "forge/safetensors.h"
#include "test_safetensors_util.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::bytes_of;
using forge::testing::TempDir;

namespace {

uint64_t le64(const std::string& s) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(s[size_t(i)]);
  return n;
}

}  // namespace

// Checks the layout with plain byte arithmetic and an independent JSON parse,
// not with the reader under test.
TEST(SafetensorsWrite, HeaderLayoutIsByteExact) {
  std::vector<float> a{1, 2, 3};             // 12 bytes
  std::vector<uint16_t> b{7};                // 2 bytes
  std::vector<int64_t> c{-1, 5};             // 16 bytes
  TempDir dir;
  auto path = dir / "x.safetensors";
  // Given out of name order on purpose.
  write_safetensors(path,
                    {{"c", StDType::I64, {2}, bytes_of(c)}, {"a", StDType::F32, {3}, bytes_of(a)},
                     {"b", StDType::BF16, {1, 1}, bytes_of(b)}},
                    {{"format", "pt"}});
  std::string file = forge::testing::read_file(path);
  uint64_t n = le64(file);
  ASSERT_LE(8 + n, file.size());
  EXPECT_EQ((8 + n) % 8, 0u) << "data section must start 8-byte aligned";
  std::string header = file.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  size_t close = header.rfind('}');
  EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << "padding must be spaces";
  EXPECT_LT(header.size() - close - 1, 8u);

  auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  EXPECT_EQ(j["a"]["data_offsets"], nlohmann::json({0, 12}));
  EXPECT_EQ(j["b"]["data_offsets"], nlohmann::json({12, 14}));
  EXPECT_EQ(j["c"]["data_offsets"], nlohmann::json({14, 30}));
  EXPECT_EQ(j["b"]["dtype"], "BF16");
  EXPECT_EQ(j["b"]["shape"], nlohmann::json({1, 1}));
  EXPECT_EQ(file.size(), 8 + n + 30);
  // Little-endian data in name order.
  const char* data = file.data() + 8 + n;
  EXPECT_EQ(std::memcmp(data, a.data(), 12), 0);
  EXPECT_EQ(std::memcmp(data + 12, b.data(), 2), 0);
  EXPECT_EQ(uint8_t(data[14]), 0xff);  // -1 as LE i64
  EXPECT_EQ(uint8_t(data[22]), 5);
}

TEST(SafetensorsWrite, NoMetadataMeansNoMetadataKey) {
  std::vector<float> a{1};
  auto bytes = serialize_safetensors({{"a", StDType::F32, {1}, bytes_of(a)}});
  std::string s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_EQ(s.find("__metadata__"), std::string::npos);
  EXPECT_TRUE(SafetensorsFile::from_bytes(bytes, "mem").metadata().empty());
}

TEST(SafetensorsWrite, FixtureRoundTripsThroughWriter) {
  SafetensorsFile src =
      SafetensorsFile::open(std::string(forge::testing::test_data_dir()) + "/llama-tiny-mlx8/model.safetensors");
  std::vector<TensorToWrite> ts;
  for (const TensorInfo& t : src.tensors()) ts.push_back({t.name, t.dtype, t.shape, src.view(t).bytes});
  TempDir dir;
  write_safetensors(dir / "copy.safetensors", ts, src.metadata());
  SafetensorsFile copy = SafetensorsFile::open(dir / "copy.safetensors");
  ASSERT_EQ(copy.tensors().size(), src.tensors().size());
  EXPECT_EQ(copy.metadata(), src.metadata());
  for (const TensorInfo& t : src.tensors()) {
    TensorView v = copy.get(t.name);
    EXPECT_EQ(v.dtype(), t.dtype) << t.name;
    EXPECT_EQ(v.shape(), t.shape) << t.name;
    auto orig = src.view(t).bytes;
    ASSERT_EQ(v.bytes.size(), orig.size()) << t.name;
    EXPECT_EQ(std::memcmp(v.bytes.data(), orig.data(), orig.size()), 0) << t.name;
  }
}

TEST(SafetensorsWrite, ReplacesAtomicallyAndLeavesNoTemporaries) {
  TempDir dir;
  auto path = dir / "m.safetensors";
  std::vector<float> one{1}, two{2, 2};
  write_safetensors(path, {{"w", StDType::F32, {1}, bytes_of(one)}});
  write_safetensors(path, {{"w", StDType::F32, {2}, bytes_of(two)}});
  EXPECT_EQ(SafetensorsFile::open(path).get("w").to_f32(), (std::vector<float>{2, 2}));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "m.safetensors");
  }
  EXPECT_EQ(files, 1);
  // A refused write leaves the previous file untouched.
  std::vector<float> three{3, 3, 3};
  EXPECT_THROW(write_safetensors(path, {{"w", StDType::F32, {2}, bytes_of(three)}}), ValueError);
  EXPECT_EQ(SafetensorsFile::open(path).get("w").to_f32(), (std::vector<float>{2, 2}));
  EXPECT_THROW(write_safetensors(dir / "no-such-dir" / "m.safetensors", {{"w", StDType::F32, {1}, bytes_of(one)}}),
               IoError);
}

TEST(SafetensorsWrite, RefusesInconsistentInput) {
  std::vector<float> a{1, 2};
  try {
    serialize_safetensors({{"a", StDType::F32, {3}, bytes_of(a)}});
    FAIL() << "wrong byte count accepted";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "[safetensors] tensor 'a' [3] of F32 needs 12 bytes, got 8");
  }
  EXPECT_THROW(serialize_safetensors({{"a", StDType::F32, {2}, bytes_of(a)}, {"a", StDType::F32, {2}, bytes_of(a)}}),
               ValueError);
  EXPECT_THROW(serialize_safetensors({{"__metadata__", StDType::F32, {2}, bytes_of(a)}}), ValueError);
  EXPECT_THROW(serialize_safetensors({{"a", StDType::F32, {-2}, bytes_of(a)}}), ValueError);
}
