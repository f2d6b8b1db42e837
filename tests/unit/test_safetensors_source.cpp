// Reading safetensors piece by piece (SafetensorsFile::from_source, what the
// browser build does with the page's Blobs): the same tensors as the mapping,
// only the bytes asked for read, and models loaded through SafetensorsFiles
// equal to those loaded from disk.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "forge/error.h"
#include "forge/model.h"
#include "forge/ops.h"
#include "forge/safetensors.h"
#include "test_safetensors_util.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::TempDir;

namespace {

const std::string kData = forge::testing::test_data_dir();

std::vector<std::byte> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// Where the data section starts: 8 + the header length (little-endian).
uint64_t header_end(const std::vector<std::byte>& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint64_t(bytes[size_t(i)]);
  return 8 + n;
}

// A source over `bytes` that counts what it reads.
ByteSource counted(const std::vector<std::byte>& bytes, uint64_t& read) {
  return {bytes.size(), [&bytes, &read](uint64_t offset, std::span<std::byte> out) {
            ASSERT_LE(offset + out.size(), bytes.size());
            std::memcpy(out.data(), bytes.data() + offset, out.size());
            read += out.size();
          }};
}

// A model folder's weights held in memory (as the page holds Blobs): the
// folder on disk has its config alone.
SafetensorsFiles in_memory(const std::filesystem::path& weights_path, const std::vector<std::byte>& bytes,
                           uint64_t& read) {
  return {[weights_path](const std::filesystem::path& p) { return p == weights_path; },
          [weights_path, &bytes, &read](const std::filesystem::path& p) {
            if (p != weights_path) throw IoError("no file " + p.string());
            return SafetensorsFile::from_source(counted(bytes, read), p.string());
          }};
}

}  // namespace

TEST(SafetensorsSource, ReadsOnlyTheHeaderThenEachTensorAsAsked) {
  const std::string path = kData + "/llama-tiny/model.safetensors";
  const std::vector<std::byte> bytes = file_bytes(path);
  SafetensorsFile mapped = SafetensorsFile::open(path);
  uint64_t read = 0;
  SafetensorsFile f = SafetensorsFile::from_source(counted(bytes, read), "llama-tiny (source)");
  ASSERT_EQ(f.tensors().size(), mapped.tensors().size());
  EXPECT_EQ(read, header_end(bytes)) << "opening read more than the header";
  for (const TensorInfo& t : mapped.tensors()) {
    const uint64_t before = read;
    EXPECT_EQ(f.info(t.name).shape, t.shape);
    EXPECT_EQ(read, before) << "info() read bytes of " << t.name;
    TensorView v = f.get(t.name);
    EXPECT_EQ(read - before, t.nbytes()) << t.name;
    ASSERT_NE(v.owned, nullptr);
    TensorView m = mapped.get(t.name);
    ASSERT_EQ(v.bytes.size(), m.bytes.size()) << t.name;
    EXPECT_EQ(std::memcmp(v.bytes.data(), m.bytes.data(), m.bytes.size()), 0) << t.name;
    EXPECT_EQ(v.to_f32(), m.to_f32()) << t.name;  // bf16 -> f32 as the mapping's
  }
  EXPECT_EQ(read, bytes.size()) << "every byte read once: header and tensors";
}

TEST(SafetensorsSource, MalformedSourcesAreRefusedAsBytesAre) {
  std::vector<std::byte> bytes = file_bytes(kData + "/gpt2-tiny/model.safetensors");
  uint64_t read = 0;
  ByteSource short_source = counted(bytes, read);
  short_source.size -= 4;  // the data section ends early
  EXPECT_THROW(SafetensorsFile::from_source(short_source, "truncated"), IoError);
  ByteSource tiny = counted(bytes, read);
  tiny.size = 5;
  EXPECT_THROW(SafetensorsFile::from_source(tiny, "tiny"), IoError);
  // A reader that fails once past the header: opening works, a tensor's read throws.
  const uint64_t data_start = header_end(bytes);
  ByteSource failing{bytes.size(), [&bytes, data_start](uint64_t offset, std::span<std::byte> out) {
                       if (offset >= data_start) throw IoError("[test] the page's file went away");
                       std::memcpy(out.data(), bytes.data() + offset, out.size());
                     }};
  SafetensorsFile f = SafetensorsFile::from_source(failing, "failing");
  EXPECT_THROW(f.get(f.tensors().back().name), IoError);
  EXPECT_THROW(SafetensorsFile::from_source(ByteSource{bytes.size(), nullptr}, "no reader"), ValueError);
}

// load_model through SafetensorsFiles that read from memory gives the logits
// of load_model from disk, for both families, reading each byte once.
TEST(SafetensorsSource, LoadModelFromSourceMatchesDisk) {
  for (const char* name : {"llama-tiny", "gpt2-tiny"}) {
    const std::filesystem::path src = std::filesystem::path(kData) / name;
    TempDir dir;
    std::filesystem::copy_file(src / "config.json", dir / "config.json");
    const std::vector<std::byte> bytes = file_bytes(src / "model.safetensors");
    uint64_t read = 0;
    auto streamed = load_model(dir.path(), Device::cpu(), in_memory(dir / "model.safetensors", bytes, read));
    auto mapped = load_model(src, Device::cpu());
    EXPECT_LE(read, bytes.size() + 4096) << name << ": tensors read more than once";
    const Tensor ids = Tensor::from_vector(std::vector<uint32_t>{1, 5, 9, 2}, {1, 4});
    const std::vector<float> a = streamed->forward(ids).to_vector<float>();
    const std::vector<float> b = mapped->forward(ids).to_vector<float>();
    EXPECT_EQ(a, b) << name;
    EXPECT_EQ(streamed->info().weights, mapped->info().weights) << name;
  }
  TempDir empty;
  std::filesystem::copy_file(std::filesystem::path(kData) / "llama-tiny" / "config.json", empty / "config.json");
  uint64_t read = 0;
  const std::vector<std::byte> none;
  EXPECT_THROW(load_model(empty.path(), Device::cpu(), in_memory(empty / "other.safetensors", none, read)), IoError);
}
