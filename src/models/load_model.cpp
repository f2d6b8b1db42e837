// load_model and random_model: the family a config names, built through the
// one loader every family shares.
#include <cstring>
#include <random>

#include "core/host_heap.h"
#include "forge/gpt2.h"
#include "forge/model.h"
#include "forge/quantize.h"
#include "models/common/owned_tensors.h"
#include "models/llama/llama.h"

namespace forge {

namespace {

// Checks the tensors against the config, then builds the family's model.
std::unique_ptr<CausalLM> build(const ModelConfig& mc, const std::vector<TensorInfo>& tensors,
                                const models::TensorSource& src, const Device& device, DType weights) {
  WeightLayout layout = check_weights(mc, tensors, src.origin);
  if (mc.arch == Arch::Llama) return std::make_unique<models::LlamaModel>(mc, src, layout.prefix, device, weights);
  throw ValueError("[model] no builder for architecture " + mc.architecture);
}

// The tensors of a Llama-family model of config `c` (Hugging Face names),
// normal(0, 0.02) with unit norms and zero biases; Linear weights and the
// embedding quantized when the config says so (scales and biases bf16).
std::vector<std::byte> random_llama_checkpoint(const ModelConfig& mc, uint64_t seed, DType dense) {
  const LlamaConfig& c = mc.llama();
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  models::OwnedTensors owned;
  auto put = [&](const std::string& name, StDType dt, const Shape& shape, const void* data, size_t n) {
    owned.put(name, dt, shape, data, n);
  };
  auto bf16 = [](const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_bf16(v[i]);
    return h;
  };
  auto fill = [&](int64_t n, float value, bool random) {
    std::vector<float> v(size_t(n), value);
    if (random)
      for (float& x : v) x = normal(rng);
    return v;
  };
  // A dense tensor in the dtype asked for.
  auto dense_put = [&](const std::string& name, const Shape& shape, const std::vector<float>& v) {
    if (dense == DType::F32) return put(name, StDType::F32, shape, v.data(), v.size() * 4);
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = dense == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
    put(name, dense == DType::BF16 ? StDType::BF16 : StDType::F16, shape, h.data(), h.size() * 2);
  };
  auto vec = [&](const std::string& name, int64_t n, float value) { dense_put(name, {n}, fill(n, value, false)); };
  auto matrix = [&](const std::string& base, int64_t out, int64_t in) {
    std::vector<float> w = fill(out * in, 0, true);
    std::optional<QuantSpec> spec = mc.quantization ? mc.quantization->for_module(base) : std::nullopt;
    if (!spec) return dense_put(base + ".weight", {out, in}, w);
    QuantizedMatrix m = quantize_affine(w, out, in, *spec);
    const int64_t groups = in / spec->group_size;
    put(base + ".weight", StDType::U32, {out, in * spec->bits / 32}, m.words.data(), m.words.size() * 4);
    auto s = bf16(m.scales), b = bf16(m.biases);
    put(base + ".scales", StDType::BF16, {out, groups}, s.data(), s.size() * 2);
    put(base + ".biases", StDType::BF16, {out, groups}, b.data(), b.size() * 2);
  };
  matrix("model.embed_tokens", V, H);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    vec(p + "input_layernorm.weight", H, 1.0f);
    vec(p + "post_attention_layernorm.weight", H, 1.0f);
    const std::pair<const char*, std::pair<int64_t, int64_t>> mats[] = {
        {"self_attn.q_proj", {q, H}}, {"self_attn.k_proj", {kv, H}}, {"self_attn.v_proj", {kv, H}},
        {"self_attn.o_proj", {H, q}}, {"mlp.gate_proj", {I, H}},     {"mlp.up_proj", {I, H}},
        {"mlp.down_proj", {H, I}}};
    for (const auto& [name, dims] : mats) {
      matrix(p + name, dims.first, dims.second);
      const bool o = std::string(name) == "self_attn.o_proj", attn = std::string(name).rfind("self_attn", 0) == 0;
      const bool bias = attn ? (o ? c.attention_bias : c.has_bias_q()) : c.mlp_bias;
      if (bias) vec(p + name + ".bias", dims.first, 0.0f);
    }
  }
  vec("model.norm.weight", H, 1.0f);
  if (!c.tie_word_embeddings) matrix("lm_head", V, H);
  return serialize_safetensors(owned.views());
}

void check_weights_dtype(DType weights) {
  if (weights != DType::F32 && weights != DType::BF16)
    throw ValueError(std::string("[model] dense weights on the device are f32 or bf16, not ") + dtype_name(weights));
}

}  // namespace

std::unique_ptr<CausalLM> load_model(const std::filesystem::path& dir, const Device& device, DType weights) {
  return load_model(dir, device, SafetensorsFiles::on_disk(), weights);
}

std::unique_ptr<CausalLM> load_model(const std::filesystem::path& dir, const Device& device,
                                     const SafetensorsFiles& files, DType weights) {
  check_weights_dtype(weights);
  if (!std::filesystem::is_directory(dir))
    throw IoError("[model] model directory '" + dir.string() + "' does not exist");
  ModelConfig mc = load_config(dir);
  if (mc.arch == Arch::Gpt2) return std::make_unique<Gpt2>(Gpt2::load(dir, device, files, weights));
  Checkpoint ckpt = Checkpoint::open(dir, files);
  return build(mc, ckpt.tensors(), models::TensorSource::of(ckpt), device, weights);
}

std::unique_ptr<CausalLM> random_model(const ModelConfig& mc, uint64_t seed, const Device& device, DType dense,
                                       DType weights) {
  check_weights_dtype(weights);
  if (mc.arch == Arch::Gpt2) {
    if (mc.quantization || dense != DType::F32 || weights != DType::F32)
      throw ValueError("[model] random GPT-2 models are f32 only");
    return std::make_unique<Gpt2>(Gpt2::random(mc.gpt2(), seed, device));
  }
  SafetensorsFile file = SafetensorsFile::from_bytes(random_checkpoint_bytes(mc, seed, dense), "random weights");
  return build(mc, file.tensors(), models::TensorSource::of(file), device, weights);
}

std::vector<std::byte> random_checkpoint_bytes(const ModelConfig& mc, uint64_t seed, DType dense) {
  if (dense != DType::F32 && dense != DType::BF16 && dense != DType::F16)
    throw ValueError(std::string("[model] random weights are f32, bf16 or f16, not ") + dtype_name(dense));
  if (mc.arch != Arch::Llama) throw ValueError("[model] random checkpoints are for the Llama family, not " + mc.architecture);
  // The checkpoint is built in memory (its tensors, then the file's bytes):
  // a shape too large for this machine is refused before the minutes of
  // drawing random numbers that would end in running out of memory.
  const LlamaConfig& c = mc.llama();
  const double params = double(c.vocab_size) * double(c.hidden_size) * (c.tie_word_embeddings ? 1 : 2) +
                        double(c.num_hidden_layers) * c.layer_weights();
  const double need = 2 * params * double(dtype_size(dense)), have = host_memory_available();
  if (have > 0 && need > have)
    throw ValueError("[model] random weights of " + std::to_string(int64_t(params / 1e6)) + "M parameters need about " +
                     std::to_string(int64_t(need / 1e9)) + " GB of memory to build, and " +
                     std::to_string(int64_t(have / 1e9)) + " GB is available");
  return random_llama_checkpoint(mc, seed, dense);
}

}  // namespace forge
