// quantize_model: a dense GPT-2 or Llama-family folder -> an MLX affine-quantized one.
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "forge/error.h"
#include "forge/quantize.h"
#include "forge/safetensors.h"
#include "io/model_folder.h"
#include "models/common/owned_tensors.h"
#include "models/common/weights.h"

namespace forge {

namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Whether a tensor is a matrix MLX quantizes: a Linear weight or the token
// embedding ([out, in], applied as x @ W^T or gathered by row; GPT-2's
// Conv1D weights are [in, out], see conv1d_weight).
bool quantizable(Arch arch, const std::string& name, const TensorInfo& t) {
  if (t.shape.size() != 2) return false;
  const std::vector<const char*> suffixes =
      arch == Arch::Gpt2 ? std::vector<const char*>{".c_attn.weight", ".c_proj.weight", ".c_fc.weight", "wte.weight"}
                         : std::vector<const char*>{"_proj.weight", "embed_tokens.weight"};
  for (const char* s : suffixes)
    if (ends_with(name, s)) return true;
  return arch != Arch::Gpt2 && name == "lm_head.weight";
}

// GPT-2's Conv1D weights, stored [in, out]: quantized as MLX stores every
// Linear, [out, in] rows with groups along the input.
bool conv1d_weight(Arch arch, const std::string& name) { return arch == Arch::Gpt2 && !ends_with(name, "wte.weight"); }

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw IoError("[quantize] cannot read " + p.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw IoError("[quantize] " + p.string() + " is not valid JSON: " + e.what());
  }
}

}  // namespace

uint64_t quantize_model(const fs::path& src, const fs::path& dst, const QuantSpec& spec) {
  if (spec.bits != 2 && spec.bits != 4 && spec.bits != 8)
    throw ValueError("[quantize] --bits must be 2, 4 or 8, got " + std::to_string(spec.bits));
  if (spec.group_size != 32 && spec.group_size != 64 && spec.group_size != 128)
    throw ValueError("[quantize] --group-size must be 32, 64 or 128, got " + std::to_string(spec.group_size));
  if (!fs::is_directory(src)) throw IoError("[quantize] model directory '" + src.string() + "' does not exist");
  io::check_folder_destination(dst);
  if (fs::exists(dst) && !(fs::is_directory(dst) && fs::is_empty(dst)))
    throw IoError("[quantize] output '" + dst.string() + "' already exists and is not an empty folder");
  ModelConfig mc = load_config(src);
  if (mc.quantization) throw ValueError("[quantize] " + src.string() + " is already quantized");
  Checkpoint ckpt = Checkpoint::open(src);
  check_weights(mc, ckpt.tensors(), src.string());

  // Scales and biases in the model's 16-bit dtype (bf16 for an f32 model).
  StDType scale_dtype = StDType::BF16;
  models::OwnedTensors outs;
  auto put = [&](const std::string& name, StDType dt, const Shape& shape, const void* data, size_t n) {
    outs.put(name, dt, shape, data, n);
  };
  for (const TensorInfo& t : ckpt.tensors())
    if (t.dtype == StDType::F16) scale_dtype = StDType::F16;
  nlohmann::json overrides = nlohmann::json::object();
  for (const TensorInfo& t : ckpt.tensors()) {
    TensorView v = ckpt.get(t.name);
    const bool conv1d = conv1d_weight(mc.arch, t.name);
    const bool wanted = quantizable(mc.arch, t.name, t);
    const int64_t out = wanted ? t.shape[conv1d ? 1 : 0] : 0, in = wanted ? t.shape[conv1d ? 0 : 1] : 0;
    if (!wanted || in % spec.group_size != 0) {
      if (wanted)  // too narrow for the group: left dense, and said so
        overrides[t.name.substr(0, t.name.size() - std::string(".weight").size())] = false;
      put(t.name, t.dtype, t.shape, v.bytes.data(), v.bytes.size());
      continue;
    }
    const int64_t groups = in / spec.group_size;
    QuantizedMatrix q = quantize_affine(conv1d ? models::transposed(v.to_f32(), in, out) : v.to_f32(), out, in, spec);
    const std::string base = t.name.substr(0, t.name.size() - std::string(".weight").size());
    put(t.name, StDType::U32, {out, in * spec.bits / 32}, q.words.data(), q.words.size() * 4);
    for (auto [suffix, values] : {std::pair{".scales", &q.scales}, std::pair{".biases", &q.biases}}) {
      std::vector<uint16_t> h(values->size());
      for (size_t i = 0; i < h.size(); ++i)
        h[i] = scale_dtype == StDType::F16 ? f32_to_f16((*values)[i]) : f32_to_bf16((*values)[i]);
      put(base + suffix, scale_dtype, {out, groups}, h.data(), h.size() * 2);
    }
  }

  const fs::path written = io::write_folder(dst, [&](const fs::path& tmp) {
    write_safetensors(tmp / "model.safetensors", outs.views(), {{"format", "mlx"}});
    nlohmann::json cfg = read_json(src / "config.json");
    nlohmann::json quant = {{"group_size", spec.group_size}, {"bits", spec.bits}};
    for (const auto& [k, v] : overrides.items()) quant[k] = v;
    cfg["quantization"] = quant;
    cfg["quantization_config"] = quant;
    io::write_text_file(tmp / "config.json", cfg.dump(2) + "\n");
    io::copy_model_side_files(src, tmp);
  });
  return fs::file_size(written / "model.safetensors");
}

}  // namespace forge
