// forge eval --model DIR [--adapter ADAPTER] --input IN.safetensors --output OUT.safetensors [--device D]:
// IN holds input_ids [B, T] (i32 or i64); OUT gets logits [B, T, V] f32 and
// loss [1] f32 (mean next-token cross-entropy over B * (T - 1) positions).
// Any model family load_model reads (GPT-2, Llama, Qwen2, Mistral; dense or
// MLX-quantized), with a LoRA adapter (PEFT layout) applied when given.
#include <cstdio>

#include "command.h"
#include "devices.h"
#include "forge/model.h"
#include "forge/safetensors.h"
#include "model_arg.h"

namespace forge::cli {
namespace {

struct EvalArgs {
  std::string model, input, output, device = "auto";
  std::string adapter;  // --adapter: a LoRA adapter folder
};

// input_ids [B, T] of IN as u32, every id checked against the vocabulary.
Tensor read_input_ids(const std::string& path, int64_t vocab) {
  SafetensorsFile f = SafetensorsFile::open(path);
  TensorView v = f.get("input_ids");
  if (v.dtype() != StDType::I32 && v.dtype() != StDType::I64)
    throw DTypeError("[eval] input_ids in " + path + " must be I32 or I64, got " + st_dtype_name(v.dtype()));
  if (v.shape().size() != 2 || v.shape()[1] < 2)
    throw ShapeError("[eval] input_ids in " + path + " must be [B, T] with T >= 2, got " + shape_str(v.shape()));
  std::vector<float> values = v.to_f32();
  std::vector<uint32_t> ids(values.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    // Exact below 2^24, which covers every vocabulary size forge loads.
    if (values[i] < 0 || values[i] >= float(vocab))
      throw ValueError("[eval] input_ids[" + std::to_string(i) + "] = " + std::to_string(int64_t(values[i])) +
                       " is out of range for vocab size " + std::to_string(vocab));
    ids[i] = uint32_t(values[i]);
  }
  return Tensor::from_vector(ids, v.shape());
}

void run(const EvalArgs& a) {
  const Device dev = resolve_devices(a.device)[0];
  std::unique_ptr<CausalLM> model = load_model_and_adapter(model_folder(a.model), dev, a.adapter);
  Tensor ids = read_input_ids(a.input, model->vocab_size());
  Tensor logits = model->forward(ids);
  const float loss = causal_lm_loss(logits, ids);
  std::vector<float> host = logits.to_vector<float>();
  write_safetensors(a.output,
                    {{"logits", StDType::F32, logits.shape(),
                      {reinterpret_cast<const std::byte*>(host.data()), host.size() * sizeof(float)}},
                     {"loss", StDType::F32, {1}, {reinterpret_cast<const std::byte*>(&loss), sizeof(float)}}});
  std::printf("loss %.6f  logits %s  device %s\n", loss, shape_str(logits.shape()).c_str(), dev.name().c_str());
}

const bool registered = register_command(
    {"eval", "Logits and loss of a model on input_ids from a safetensors file", [](CLI::App& sub) {
       static EvalArgs a;
       sub.add_option("-m,--model", a.model, "Model folder, or a Hugging Face id org/name[@revision]")->required();
       sub.add_option("--adapter", a.adapter, "A LoRA adapter folder (PEFT layout) to apply to the model");
       sub.add_option("--input", a.input, "safetensors file holding input_ids [B, T]")->required();
       sub.add_option("--output", a.output, "safetensors file to write logits and loss to")->required();
       add_device_option(sub, a.device);
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
