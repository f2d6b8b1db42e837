// libFuzzer target for the safetensors parser. Any input must either be refused with
// forge::IoError or parse into tensors whose bytes lie inside the input; then every
// tensor is read, converted where the dtype allows, and the file is written back out
// and parsed again, which must give the same tensors. Anything else is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "forge/error.h"
#include "forge/safetensors.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_safetensors: invariant failed: %s\n", what);
    std::abort();
  }
}

// `input` is the fuzzer's buffer; `f` was parsed from a copy of it.
void exercise(const forge::SafetensorsFile& f, const forge::SafetensorsHeader& h, std::span<const std::byte> input) {
  check(h.tensors.size() == f.tensors().size(), "span and file parse agree");
  std::vector<forge::TensorToWrite> out;
  for (const forge::TensorInfo& t : h.tensors) {
    check(t.begin <= t.end && h.data_start + t.end <= input.size(), "entry inside the input");
    forge::TensorView v = f.get(t.name);
    check(v.bytes.size() == t.nbytes() && v.dtype() == t.dtype && v.shape() == t.shape, "get() matches the entry");
    check(v.bytes.empty() || std::memcmp(v.bytes.data(), input.data() + h.data_start + t.begin, v.bytes.size()) == 0,
          "view holds the entry's bytes");
    if (v.numel() <= (1 << 16)) {
      try {
        std::vector<float> values = v.to_f32();
        check(int64_t(values.size()) == v.numel(), "to_f32 size");
      } catch (const forge::DTypeError&) {
        check(!forge::to_dtype(t.dtype).has_value(), "only dtypes without a forge::DType refuse");
      }
    }
    out.push_back({t.name, t.dtype, t.shape, v.bytes});
  }
  // Round trip through the writer.
  forge::SafetensorsFile again =
      forge::SafetensorsFile::from_bytes(forge::serialize_safetensors(out, f.metadata()), "rewritten");
  check(again.tensors().size() == f.tensors().size(), "round trip keeps every tensor");
  check(again.metadata() == f.metadata(), "round trip keeps metadata");
  for (const forge::TensorInfo& t : f.tensors()) {
    forge::TensorView a = again.get(t.name), b = f.get(t.name);
    check(a.dtype() == b.dtype() && a.shape() == b.shape(), "round trip keeps dtype and shape");
    check(a.bytes.size() == b.bytes.size() &&
              (a.bytes.empty() || std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0),
          "round trip keeps bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> bytes(size);
  if (size) std::memcpy(bytes.data(), data, size);
  try {
    // The header parser on the span itself, then the owning file (which copies it).
    forge::SafetensorsHeader h = forge::parse_safetensors_header(bytes, "fuzz-input");
    forge::SafetensorsFile f = forge::SafetensorsFile::from_bytes(bytes, "fuzz-input");
    exercise(f, h, bytes);
  } catch (const forge::IoError&) {
    // A refused file: the expected outcome for most inputs.
  }
  return 0;
}
