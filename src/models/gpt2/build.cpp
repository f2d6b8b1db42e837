// Gpt2 construction: from a checkpoint directory, from host tensors, from a
// random initialisation.
#include <unordered_map>

#include "forge/ops/gather.h"
#include "forge/safetensors.h"
#include "forge/gpt2_train.h"
#include "models/common/weights.h"
#include "models/gpt2/build.h"

namespace forge {

namespace gpt2 {

std::vector<std::pair<std::string, Shape>> tensor_shapes(const Gpt2Config& c) {
  const int64_t C = c.n_embd, I = c.n_inner ? c.n_inner : 4 * c.n_embd;
  std::vector<std::pair<std::string, Shape>> out = {{"wte.weight", {c.vocab_size, C}},
                                                    {"wpe.weight", {c.n_positions, C}}};
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    out.insert(out.end(), {{p + "ln_1.weight", {C}},
                           {p + "ln_1.bias", {C}},
                           {p + "attn.c_attn.weight", {C, 3 * C}},
                           {p + "attn.c_attn.bias", {3 * C}},
                           {p + "attn.c_proj.weight", {C, C}},
                           {p + "attn.c_proj.bias", {C}},
                           {p + "ln_2.weight", {C}},
                           {p + "ln_2.bias", {C}},
                           {p + "mlp.c_fc.weight", {C, I}},
                           {p + "mlp.c_fc.bias", {I}},
                           {p + "mlp.c_proj.weight", {I, C}},
                           {p + "mlp.c_proj.bias", {C}}});
  }
  out.insert(out.end(), {{"ln_f.weight", {C}}, {"ln_f.bias", {C}}});
  return out;
}

Gpt2Weights build_weights(const Gpt2Config& c, const HostSource& source, const Device& device,
                          const QuantizedSource& quantized) {
  auto get = [&](const std::string& name, const Shape& shape) {
    return Tensor::from_vector(source(name, shape), shape, device);
  };
  // A projection: quantized as the checkpoint has it, else Conv1D [in, out].
  auto linear = [&](const std::string& base, int64_t in, int64_t out) {
    if (quantized)
      if (std::optional<models::Linear> q = quantized(base, out, in)) return *q;
    models::Linear l;
    l.in = in;
    l.out = out;
    l.w = get(base + ".weight", {in, out});
    l.conv1d = true;
    l.bias = get(base + ".bias", {out});
    return l;
  };
  const int64_t C = c.n_embd, I = c.n_inner ? c.n_inner : 4 * c.n_embd;
  Gpt2Weights w;
  if (std::optional<models::Linear> q = quantized ? quantized("wte", c.vocab_size, C) : std::nullopt) {
    w.wte_q = *q;
  } else {
    Tensor table = Tensor::from_vector(source("wte.weight", {c.vocab_size, C}), {c.vocab_size, C});
    for (const Tensor& chunk : split_rows_for_binding(table, device)) w.wte.push_back(chunk.to(device));
    w.wte_chunk_rows = w.wte[0].dim(0);
  }
  w.wpe = get("wpe.weight", {c.n_positions, C});
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    Gpt2Block b;
    b.ln_1_w = get(p + "ln_1.weight", {C});
    b.ln_1_b = get(p + "ln_1.bias", {C});
    b.c_attn = linear(p + "attn.c_attn", C, 3 * C);
    b.attn_proj = linear(p + "attn.c_proj", C, C);
    b.ln_2_w = get(p + "ln_2.weight", {C});
    b.ln_2_b = get(p + "ln_2.bias", {C});
    b.fc = linear(p + "mlp.c_fc", C, I);
    b.mlp_proj = linear(p + "mlp.c_proj", I, C);
    w.h.push_back(std::move(b));
  }
  w.ln_f_w = get("ln_f.weight", {C});
  w.ln_f_b = get("ln_f.bias", {C});
  return w;
}

std::vector<std::pair<std::string, models::Linear*>> linears(Gpt2Weights& w) {
  std::vector<std::pair<std::string, models::Linear*>> out;
  for (size_t l = 0; l < w.h.size(); ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    Gpt2Block& b = w.h[l];
    out.insert(out.end(), {{p + "attn.c_attn", &b.c_attn},
                           {p + "attn.c_proj", &b.attn_proj},
                           {p + "mlp.c_fc", &b.fc},
                           {p + "mlp.c_proj", &b.mlp_proj}});
  }
  return out;
}

std::vector<std::pair<std::string, Tensor*>> lora_named(Gpt2Weights& w) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (auto& [name, lin] : linears(w)) {
    if (!lin->lora.defined()) continue;
    out.push_back({"base_model.model." + name + ".lora_A.weight", &lin->lora.a});
    out.push_back({"base_model.model." + name + ".lora_B.weight", &lin->lora.b});
  }
  return out;
}

}  // namespace gpt2

Gpt2::Gpt2(Gpt2Config config, Device device) : CausalLM(std::move(device)), config_(std::move(config)) {
  info_.family = "gpt2";
  info_.architecture = "GPT2LMHeadModel";
  info_.vocab_size = config_.vocab_size;
  info_.context_length = config_.n_positions;
  info_.context_key = "n_positions";
  info_.hidden_size = config_.n_embd;
  info_.layers = config_.n_layer;
  info_.weights = "f32";
}

namespace {

// Fills in what the weights say once they are on the device.
void tally_weights(Gpt2Weights& w, ModelInfo& info) {
  uint64_t bytes = 0;
  int64_t params = 0;
  for (const auto& [name, t] : gpt2_named_params(w)) {
    if (!t->defined()) continue;  // a quantized weight (below)
    bytes += t->nbytes();
    params += t->numel();
  }
  std::vector<const models::Linear*> packed{&w.wte_q};
  for (const Gpt2Block& b : w.h)
    for (const models::Linear* l : {&b.c_attn, &b.attn_proj, &b.fc, &b.mlp_proj}) packed.push_back(l);
  for (const models::Linear* l : packed) {
    if (!l->quant) continue;
    bytes += l->q.nbytes() + l->scales.nbytes() + l->biases.nbytes();
    params += l->in * l->out;
  }
  info.device_bytes = bytes;
  info.parameters = params;
}

}  // namespace

Gpt2 Gpt2::load(const std::filesystem::path& dir, const Device& device, DType weights) {
  return load(dir, device, SafetensorsFiles::on_disk(), weights);
}

Gpt2 Gpt2::load(const std::filesystem::path& dir, const Device& device, const SafetensorsFiles& files,
                DType weights) {
  if (!std::filesystem::is_directory(dir))
    throw IoError("[gpt2] model directory '" + dir.string() + "' does not exist");
  ModelConfig mc = load_config(dir);
  const Gpt2Config& c = mc.gpt2();
  if (c.activation_function != "gelu_new" && c.activation_function != "gelu_pytorch_tanh")
    throw ValueError("[gpt2] activation_function '" + c.activation_function + "' is not supported (gelu_new only) in " +
                     mc.source);
  Checkpoint ckpt = Checkpoint::open(dir, files);
  WeightLayout layout = check_weights(mc, ckpt.tensors(), dir.string());
  if (!layout.tied_embeddings)
    throw ValueError("[gpt2] an untied lm_head.weight is not supported in " + dir.string());
  Gpt2 m(c, device);
  const models::TensorSource src = models::TensorSource::of(ckpt);
  models::DeviceTally tally;
  gpt2::QuantizedSource quantized;
  if (layout.quantized || weights == DType::BF16)
    // The modules loaded here, not from host f32 values: the quantized ones,
    // and with bf16 weights the blocks' projections (wte stays f32).
    quantized = [&](const std::string& base, int64_t out, int64_t in) -> std::optional<models::Linear> {
      const std::string full = layout.name(base);
      const bool packed = layout.quantized && src.contains(full + ".scales");
      if (!packed && (weights != DType::BF16 || base == "wte")) return std::nullopt;
      return models::Linear::load(src, full, out, in, base != "wte", packed ? mc.quantization : std::nullopt, device,
                                  tally, true, weights);
    };
  m.w_ = gpt2::build_weights(
      c, [&](const std::string& name, const Shape&) { return ckpt.get(layout.name(name)).to_f32(); }, device,
      quantized);
  tally_weights(m.w_, m.info_);
  if (mc.bos_token_id) m.info_.bos = uint32_t(*mc.bos_token_id);
  for (int64_t e : mc.eos_token_ids) m.info_.eos.push_back(uint32_t(e));
  const std::string dt = models::dense_dtype_summary(src, {layout.name("ln_f.weight")});
  if (layout.quantized) {
    const QuantizationConfig& q = *mc.quantization;
    m.info_.weights = "mlx q" + std::to_string(q.bits) + " (group " + std::to_string(q.group_size) + ")";
    if (!q.overrides.empty()) m.info_.weights += " with per-layer overrides";
    m.info_.weights += ", " + dt + " norms";
  } else if (weights == DType::BF16) {
    m.info_.weights = dt == "bf16" ? "bf16" : dt + " -> bf16";
  } else if (dt != "f32") {
    m.info_.weights = dt + " (computed in f32)";
  }
  return m;
}

Gpt2 Gpt2::from_host(const Gpt2Config& c, const std::vector<Gpt2HostTensor>& tensors, const Device& device) {
  // Zero heads or sizes: an error, not a division by zero (n_inner 0 means 4 C).
  Gpt2Config checked = c;
  if (checked.n_inner == 0) checked.n_inner = 4 * checked.n_embd;
  validate(checked, "the config given to Gpt2::from_host");
  std::unordered_map<std::string, const Gpt2HostTensor*> by_name;
  for (const auto& t : tensors) by_name[t.name] = &t;
  Gpt2 m(c, device);
  m.w_ = gpt2::build_weights(
      c,
      [&](const std::string& name, const Shape& shape) {
        auto it = by_name.find(name);
        if (it == by_name.end()) throw ValueError("[gpt2] no host tensor '" + name + "'");
        if (it->second->shape != shape)
          throw ShapeError("[gpt2] host tensor '" + name + "' has shape " + shape_str(it->second->shape) +
                           ", expected " + shape_str(shape));
        return it->second->values;
      },
      device);
  tally_weights(m.w_, m.info_);
  return m;
}

Gpt2 Gpt2::random(const Gpt2Config& config, uint64_t seed, const Device& device) {
  return from_host(config, gpt2_random_tensors(config, seed), device);
}

}  // namespace forge
