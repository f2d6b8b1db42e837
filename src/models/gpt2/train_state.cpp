// The optimizer state beside a training checkpoint: DIR/optimizer.safetensors
// holds the AdamW moments m.<name>, v.<name> (f32) and, as metadata, the step
// count, the trainer's seed and whatever the caller adds (the data sampler's
// state). Written to a temporary file and renamed (write_safetensors).
#include <charconv>
#include "forge/gpt2_train.h"
#include "forge/safetensors.h"

namespace forge {

void write_gpt2_train_state(const std::filesystem::path& dir, const Gpt2Trainer& trainer,
                            const std::map<std::string, std::string>& extra) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError("[gpt2_train] cannot create '" + dir.string() + "': " + ec.message());
  const std::vector<Gpt2HostTensor> state = trainer.host_state();
  std::vector<TensorToWrite> out;
  for (const auto& t : state)
    out.push_back({t.name, StDType::F32, t.shape,
                   {reinterpret_cast<const std::byte*>(t.values.data()), t.values.size() * sizeof(float)}});
  std::map<std::string, std::string> meta = extra;
  meta["step"] = std::to_string(trainer.steps_done());
  meta["seed"] = std::to_string(trainer.config().seed);
  write_safetensors(dir / "optimizer.safetensors", out, meta);
}

std::map<std::string, std::string> read_gpt2_train_state(const std::filesystem::path& dir, Gpt2Trainer& trainer) {
  const std::filesystem::path path = dir / "optimizer.safetensors";
  if (!std::filesystem::exists(path))
    throw IoError("[gpt2_train] no optimizer state '" + path.string() + "' to resume from");
  SafetensorsFile f = SafetensorsFile::open(path);
  std::vector<Gpt2HostTensor> state;
  for (const TensorInfo& info : f.tensors()) {
    TensorView v = f.view(info);
    state.push_back({info.name, v.shape(), v.to_f32()});
  }
  std::map<std::string, std::string> meta = f.metadata();
  auto it = meta.find("step");
  if (it == meta.end()) throw IoError("[gpt2_train] " + path.string() + " has no 'step' in its metadata");
  int64_t step = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), step);
  if (ec != std::errc() || end != text.data() + text.size() || step < 0)
    throw IoError("[gpt2_train] " + path.string() + " has step '" + text + "' in its metadata, not a step count");
  trainer.load_state(state, step);
  return meta;
}

}  // namespace forge
