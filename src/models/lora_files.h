// PEFT adapter folders read without a model: adapter_config.json and every
// tensor of adapter_model.safetensors checked against the Linear modules a
// model offers. load_adapter (forge/lora.h) uploads what this returns; the
// adapter fuzz target drives it alone.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "forge/lora.h"

namespace forge::lora {

// One Linear a model offers, by its transformers name
// ("model.layers.0.self_attn.q_proj"): y [out] = W [out, in] x [in].
struct Module {
  std::string name;
  int64_t in = 0, out = 0;
};

// One targeted module's adapter, f32.
struct ModuleWeights {
  size_t module = 0;     // index into the modules given
  std::vector<float> a;  // [r, in]
  std::vector<float> b;  // [out, r]
};

// The short name of a module ("model.layers.0.self_attn.q_proj" -> "q_proj").
std::string short_name(const std::string& module);
// Whether `config` targets `module` (by its short name).
bool targeted(const LoraConfig& config, const std::string& module);
// ValueError for rank < 1, alpha not positive and finite, no target, or a
// target not among `available` (short names); `where` ends the message.
void check_config(const LoraConfig& config, const std::vector<std::string>& available, const std::string& where);

// DIR/adapter_model.safetensors read for `config` (checked first against
// the short names of `modules`): the weights of every targeted module, in
// the order of `modules`. IoError for a missing or malformed file;
// ValueError for a key that is no LoRA weight of a targeted module, or a
// missing one; ShapeError for a tensor of another shape.
std::vector<ModuleWeights> read_adapter_weights(const std::filesystem::path& dir, const LoraConfig& config,
                                                const std::vector<Module>& modules);

}  // namespace forge::lora
