// libFuzzer target for config.json (parse_config). Any input must either be
// refused with a forge::Error subclass or give a config that validate()
// accepts and whose sizes are positive; check_weights against no tensors must
// then refuse it with IoError. Anything else (another exception, a sanitizer
// report) is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "forge/error.h"
#include "forge/model_config.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_config: invariant failed: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  forge::ModelConfig c;
  try {
    c = forge::parse_config(text, "fuzz/config.json");
  } catch (const forge::IoError&) {
    return 0;
  } catch (const forge::ValueError&) {
    return 0;
  }
  if (c.arch == forge::Arch::Gpt2) {
    forge::validate(c.gpt2(), "again");  // parse_config's result passes its own checks
    check(c.gpt2().head_dim() > 0, "gpt2 head_dim positive");
  } else {
    forge::validate(c.llama(), "again");
    check(c.llama().head_dim > 0 && c.llama().num_attention_heads % c.llama().num_key_value_heads == 0,
          "llama heads consistent");
  }
  check(c.vocab_size() > 0, "vocab_size positive");
  if (c.quantization) check(c.quantization->group_size > 0, "group_size positive");
  try {
    forge::check_weights(c, {}, "fuzz");
    check(false, "check_weights accepted a checkpoint without tensors");
  } catch (const forge::IoError&) {
  } catch (const forge::ValueError&) {
  }
  return 0;
}
