// Every class of malformed safetensors file is refused with an IoError that names
// the file and the problem. Each file is built by hand in a temporary directory and
// also parsed from memory (the path the fuzz target takes).
#include <gtest/gtest.h>

#include "forge/error.h"
#include "forge/safetensors.h"
#include "test_safetensors_util.h"

using namespace forge;
using forge::testing::raw_file;
using forge::testing::TempDir;

namespace {

// Writes `bytes`, opens it, and checks the IoError names the file and contains `problem`.
void expect_refused(const std::vector<std::byte>& bytes, const std::string& problem) {
  TempDir dir;
  auto path = dir / "bad.safetensors";
  forge::testing::write_file(path, bytes);
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << "accepted a file that should fail with: " << problem;
  } catch (const IoError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[safetensors] ", 0), 0u) << msg;
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << "expected '" << problem << "' in: " << msg;
  }
  try {
    SafetensorsFile::from_bytes(bytes, "memory-buffer");
    ADD_FAILURE() << "from_bytes accepted: " << problem;
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("memory-buffer"), std::string::npos) << e.what();
  }
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t b,
                  uint64_t e) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(b) + "," + std::to_string(e) + "]}";
}

}  // namespace

TEST(SafetensorsMalformed, WellFormedBaselineOpens) {
  // The same construction as the bad cases below, valid: so each failure is the intended one.
  auto bytes = raw_file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "U8", "[4]", 8, 12) + "}", 12);
  SafetensorsFile f = SafetensorsFile::from_bytes(bytes, "ok");
  EXPECT_EQ(f.tensors().size(), 2u);
  // Zero-size tensors and an empty header are valid too.
  EXPECT_NO_THROW(SafetensorsFile::from_bytes(raw_file("{" + entry("z", "F32", "[0, 3]", 0, 0) + "}", 0), "ok"));
  EXPECT_NO_THROW(SafetensorsFile::from_bytes(raw_file("{}", 0), "ok"));
}

TEST(SafetensorsMalformed, ShorterThanEightBytes) {
  expect_refused(std::vector<std::byte>(5), "file is 5 bytes, too short");
  expect_refused({}, "file is 0 bytes");
}

TEST(SafetensorsMalformed, HeaderLengthBeyondFile) {
  expect_refused(raw_file("{}", 0, 1000), "header length 1000 exceeds the file size 10");
}

TEST(SafetensorsMalformed, HeaderLengthBeyondSaneBound) {
  expect_refused(raw_file("{}", 0, uint64_t(200) << 20), "exceeds the limit of 104857600");
  expect_refused(raw_file("{}", 0, ~uint64_t(0)), "exceeds the limit");
}

TEST(SafetensorsMalformed, InvalidJson) {
  expect_refused(raw_file(R"({"a": {"dtype": "F32",)", 0), "invalid JSON");
  expect_refused(raw_file("\xff\xfe{}", 0), "invalid JSON");
}

TEST(SafetensorsMalformed, HeaderNotAnObject) {
  expect_refused(raw_file("[1, 2, 3]", 0), "header is a JSON array, not an object");
  expect_refused(raw_file(R"({"a": 5})", 0), "tensor 'a' entry is a number, not an object");
}

TEST(SafetensorsMalformed, MissingOrMistypedFields) {
  expect_refused(raw_file(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "tensor 'a' has no \"data_offsets\"");
  expect_refused(raw_file(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4), "tensor 'a' has no \"shape\"");
  expect_refused(raw_file(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", 4), "dtype is 7, not a string");
  expect_refused(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4), "not [begin, end]");
  expect_refused(raw_file(R"({"__metadata__":{"k":1}})", 0), "__metadata__ value for 'k' is 1, not a string");
}

TEST(SafetensorsMalformed, EndBeforeBegin) {
  expect_refused(raw_file("{" + entry("a", "U8", "[0]", 8, 4) + "}", 8), "data_offsets [8, 4] end before begin");
}

TEST(SafetensorsMalformed, OffsetsOutOfRange) {
  expect_refused(raw_file("{" + entry("a", "F32", "[256]", 0, 1024) + "}", 16),
                 "tensor 'a' ends at data offset 1024 but the data section has 16 bytes");
}

TEST(SafetensorsMalformed, TruncatedDataSection) {
  // Header and entries intact; the last tensor's bytes are cut off.
  auto full = raw_file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 8, 16) + "}", 16);
  full.resize(full.size() - 3);
  expect_refused(full, "file truncated: tensor 'b' ends at data offset 16 but the data section has 13 bytes");
}

TEST(SafetensorsMalformed, OverlappingTensors) {
  expect_refused(raw_file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12) + "}", 12),
                 "tensor 'b' data_offsets [4, 12] overlap tensor 'a' [0, 8]");
}

TEST(SafetensorsMalformed, GapBetweenTensors) {
  expect_refused(raw_file("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}", 12),
                 "gap in the data section: bytes [4, 8) belong to no tensor");
  expect_refused(raw_file("{" + entry("a", "F32", "[1]", 4, 8) + "}", 8), "bytes [0, 4) belong to no tensor");
}

TEST(SafetensorsMalformed, BytesAfterTheLastTensor) {
  expect_refused(raw_file("{" + entry("a", "F32", "[1]", 0, 4) + "}", 12),
                 "data section has 12 bytes but the tensors cover only 4");
}

TEST(SafetensorsMalformed, ShapeDoesNotMatchByteCount) {
  expect_refused(raw_file("{" + entry("a", "F32", "[3]", 0, 8) + "}", 8),
                 "tensor 'a' shape [3] of F32 needs 12 bytes but data_offsets [0, 8] hold 8");
  // Extents whose product overflows 64 bits.
  expect_refused(raw_file("{" + entry("a", "F32", "[4294967296, 4294967296]", 0, 8) + "}", 8),
                 "needs more than 2^64 bytes");
}

TEST(SafetensorsMalformed, NegativeOrNonIntegerShape) {
  expect_refused(raw_file("{" + entry("a", "F32", "[-1]", 0, 4) + "}", 4), "shape holds negative value -1");
  expect_refused(raw_file("{" + entry("a", "F32", "[2.5]", 0, 4) + "}", 4), "shape holds 2.5, not an integer");
  expect_refused(raw_file("{" + entry("a", "F32", "\"2\"", 0, 4) + "}", 4), "shape is \"2\", not an array");
}

TEST(SafetensorsMalformed, UnknownDtype) {
  expect_refused(raw_file("{" + entry("a", "F7", "[1]", 0, 4) + "}", 4), "tensor 'a' has unknown dtype \"F7\"");
}

TEST(SafetensorsMalformed, DuplicateNames) {
  expect_refused(raw_file("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("a", "F32", "[1]", 4, 8) + "}", 8),
                 "duplicate key 'a'");
  // Duplicates inside an entry are ambiguous as well.
  expect_refused(raw_file(R"({"a":{"dtype":"F32","dtype":"U8","shape":[1],"data_offsets":[0,4]}})", 4),
                 "duplicate key 'dtype'");
}
