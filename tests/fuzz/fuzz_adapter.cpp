// libFuzzer target for LoRA adapter folders (models/lora_files.h): the input
// is adapter_config.json, then a NUL byte and adapter_model.safetensors (no
// NUL: the folder has no weights file). Both are written into a folder that
// is read as load_adapter reads it, for the Linears of a one-layer Llama
// (hidden 8, MLP 12, two KV heads of 2). Any input must be refused with a
// forge::Error subclass or give one A [r, 8 or 12] and B [out, r] per
// targeted module, with a positive finite scale. Anything else is a finding.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "forge/error.h"
#include "../unit/process_temp_dir.h"
#include "models/lora_files.h"

namespace fs = std::filesystem;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_adapter: invariant failed: %s\n", what);
    std::abort();
  }
}

const fs::path& scratch() { return forge::testing::process_temp_dir("fuzz_adapter"); }

void write(const fs::path& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

// The Linears of layer 0 of a Llama with hidden 8, intermediate 12, kv 4.
const std::vector<forge::lora::Module>& modules() {
  static const std::vector<forge::lora::Module> m = {
      {"model.layers.0.self_attn.q_proj", 8, 8},  {"model.layers.0.self_attn.k_proj", 8, 4},
      {"model.layers.0.self_attn.v_proj", 8, 4},  {"model.layers.0.self_attn.o_proj", 8, 8},
      {"model.layers.0.mlp.gate_proj", 8, 12},    {"model.layers.0.mlp.up_proj", 8, 12},
      {"model.layers.0.mlp.down_proj", 12, 8}};
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t config_size = nul ? size_t(nul - data) : size;
  write(scratch() / "adapter_config.json", data, config_size);
  const fs::path weights = scratch() / "adapter_model.safetensors";
  if (nul)
    write(weights, nul + 1, size - config_size - 1);
  else
    fs::remove(weights);
  try {
    const forge::LoraConfig c = forge::read_adapter_config(scratch());
    const std::vector<forge::lora::ModuleWeights> w = forge::lora::read_adapter_weights(scratch(), c, modules());
    check(c.rank >= 1 && std::isfinite(c.scaling()) && c.scaling() > 0, "rank and scale");
    size_t n = 0;
    for (const forge::lora::Module& m : modules()) n += forge::lora::targeted(c, m.name);
    check(w.size() == n, "one entry per targeted module");
    for (const forge::lora::ModuleWeights& x : w) {
      const forge::lora::Module& m = modules().at(x.module);
      check(forge::lora::targeted(c, m.name), "only targeted modules");
      check(int64_t(x.a.size()) == c.rank * m.in && int64_t(x.b.size()) == m.out * c.rank, "A and B sizes");
    }
  } catch (const forge::Error&) {
  }
  return 0;
}
