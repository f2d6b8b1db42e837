// GPT-2 presets, random initialisation and writing a checkpoint in the
// Hugging Face layout.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "forge/safetensors.h"
#include "models/gpt2/build.h"

namespace forge {

Gpt2Config gpt2_preset(std::string_view name) {
  Gpt2Config c;
  c.vocab_size = 50257;
  c.n_positions = 1024;
  if (name == "124M") c.n_embd = 768, c.n_layer = 12, c.n_head = 12;
  else if (name == "355M") c.n_embd = 1024, c.n_layer = 24, c.n_head = 16;
  else if (name == "774M") c.n_embd = 1280, c.n_layer = 36, c.n_head = 20;
  else if (name == "1.5B") c.n_embd = 1600, c.n_layer = 48, c.n_head = 25;
  else if (name == "tiny") c.n_embd = 64, c.n_layer = 2, c.n_head = 2, c.n_positions = 128;
  else
    throw ValueError("[gpt2] unknown preset '" + std::string(name) + "' (known: 124M, 355M, 774M, 1.5B, tiny)");
  c.n_inner = 4 * c.n_embd;
  return c;
}

std::vector<Gpt2HostTensor> gpt2_random_tensors(const Gpt2Config& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double proj_std = 0.02 / std::sqrt(2.0 * double(c.n_layer));
  std::vector<Gpt2HostTensor> out;
  for (auto& [name, shape] : gpt2::tensor_shapes(c)) {
    Gpt2HostTensor t{name, shape, std::vector<float>(size_t(numel(shape)))};
    // (t.name, not the structured binding: clang before 16 cannot capture bindings.)
    auto ends_with = [&t](const char* s) { return t.name.ends_with(s); };
    if (ends_with(".bias")) {
      // zeros already
    } else if (name.find("ln_") != std::string::npos) {
      std::fill(t.values.begin(), t.values.end(), 1.0f);
    } else {
      std::normal_distribution<float> dist(0.0f, ends_with("c_proj.weight") ? float(proj_std) : 0.02f);
      for (float& x : t.values) x = dist(rng);
    }
    out.push_back(std::move(t));
  }
  return out;
}

void write_gpt2_checkpoint(const std::filesystem::path& dir, const Gpt2Config& c,
                           const std::vector<Gpt2HostTensor>& tensors) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError("[gpt2] cannot create '" + dir.string() + "': " + ec.message());
  nlohmann::ordered_json config = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", c.vocab_size},
      {"n_positions", c.n_positions},
      {"n_ctx", c.n_positions},
      {"n_embd", c.n_embd},
      {"n_layer", c.n_layer},
      {"n_head", c.n_head},
      {"n_inner", nullptr},
      {"activation_function", c.activation_function},
      {"layer_norm_epsilon", c.layer_norm_epsilon},
      {"resid_pdrop", 0.1},
      {"embd_pdrop", 0.1},
      {"attn_pdrop", 0.1},
      {"initializer_range", 0.02},
      {"bos_token_id", 50256},
      {"eos_token_id", 50256},
      {"tie_word_embeddings", true},
      {"torch_dtype", "float32"},
  };
  if (c.n_inner && c.n_inner != 4 * c.n_embd) config["n_inner"] = c.n_inner;
  nlohmann::ordered_json gen = {{"bos_token_id", 50256}, {"eos_token_id", 50256}};
  auto write_text = [&](const char* file, const std::string& text) {
    std::ofstream f(dir / file, std::ios::binary);
    f << text << "\n";
    if (!f) throw IoError("[gpt2] cannot write '" + (dir / file).string() + "'");
  };
  write_text("config.json", config.dump(2));
  write_text("generation_config.json", gen.dump(2));
  std::vector<TensorToWrite> out;
  for (const auto& t : tensors)
    out.push_back({t.name, StDType::F32, t.shape,
                   {reinterpret_cast<const std::byte*>(t.values.data()), t.values.size() * sizeof(float)}});
  write_safetensors(dir / "model.safetensors", out, {{"format", "pt"}});
}

}  // namespace forge
