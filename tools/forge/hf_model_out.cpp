// Model folders in the Hugging Face layout from host weights (hf_model_out.h).
#include "hf_model_out.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <span>

#include "forge/dtype.h"
#include "forge/error.h"
#include "forge/safetensors.h"
#include "io/model_folder.h"

namespace forge::cli {

void write_hf_model(const std::filesystem::path& dir, const std::filesystem::path& source_dir,
                    const std::vector<HostTensor>& weights, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::BF16)
    throw ValueError(std::string("[model] weights are written f32 or bf16, not ") + dtype_name(dtype));
  const bool bf16 = dtype == DType::BF16;
  namespace fs = std::filesystem;
  const fs::path source_config = source_dir / "config.json";
  std::ifstream in(source_config);
  nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  if (config.is_discarded()) throw IoError("[model] cannot read '" + source_config.string() + "'");
  for (const char* key : {"dtype", "torch_dtype"})
    if (config.contains(key)) config[key] = bf16 ? "bfloat16" : "float32";
  for (const char* key : {"quantization", "quantization_config"}) config.erase(key);
  std::vector<TensorToWrite> tensors;
  std::vector<std::vector<uint16_t>> rounded(bf16 ? weights.size() : 0);  // bf16 copies, alive until written
  for (size_t i = 0; i < weights.size(); ++i) {
    const HostTensor& t = weights[i];
    if (!bf16) {
      tensors.push_back({t.name, StDType::F32, t.shape, std::as_bytes(std::span(t.values))});
      continue;
    }
    rounded[i].resize(t.values.size());
    for (size_t j = 0; j < t.values.size(); ++j) rounded[i][j] = f32_to_bf16(t.values[j]);
    tensors.push_back({t.name, StDType::BF16, t.shape, std::as_bytes(std::span(rounded[i]))});
  }
  io::write_folder(dir, [&](const fs::path& tmp) {
    write_safetensors(tmp / "model.safetensors", tensors, {{"format", "pt"}});
    io::write_text_file(tmp / "config.json", config.dump(1) + "\n");
    io::copy_model_side_files(source_dir, tmp);
  });
}

}  // namespace forge::cli
