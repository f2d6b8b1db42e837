// forge eval --model DIR [--adapter ADAPTER] --input IN.safetensors [--output OUT.safetensors] [--json] [--device D]:
//   IN holds input_ids [B, T] (i32 or i64; `forge tokenize --out` writes one);
//   OUT gets logits [B, T, V] f32 and loss [1] f32 (mean next-token
//   cross-entropy over B * (T - 1) positions).
// forge eval --model DIR --text-file F [--tokenizer T] [--ctx N] [--stride S] [--json] [--device D]:
//   loss and perplexity over the text with a sliding window (forge/perplexity.h):
//   windows of N ids (default: the model's context) every S ids (default N),
//   each scoring the ids the previous one did not.
// Any model family load_model reads (GPT-2, Llama, Qwen2, Mistral; dense or
// MLX-quantized), with a LoRA adapter (PEFT layout) applied when given.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/model.h"
#include "forge/perplexity.h"
#include "forge/safetensors.h"
#include "forge/tokenizer.h"
#include "io/model_folder.h"
#include "model_arg.h"
#include "text/tokenizer_spec.h"

namespace forge::cli {
namespace {

struct EvalArgs {
  std::string model, input, output, text_file, tokenizer, device = "auto";
  int64_t ctx = 0, stride = 0;
  bool json = false;
  std::string adapter;  // --adapter: a LoRA adapter folder
  std::string dtype = "f32";  // --dtype: dense weights on the device
};

// A loss that is not finite comes from logits that are not: an error that
// says so, not "loss nan" (or null in JSON) with exit code 0.
void check_finite_loss(double loss) {
  if (std::isfinite(loss)) return;
  throw ValueError(std::string("[eval] the loss is ") + (std::isnan(loss) ? "NaN" : "infinite") +
                   ": the model's logits hold values that are not finite (weights that are not finite, or a "
                   "forward pass that overflowed)");
}

void eval_input(const EvalArgs& a, const CausalLM& model, const Device& dev) {
  Tensor ids = read_input_ids(a.input, model.vocab_size(), "eval");
  if (!a.output.empty()) io::check_file_destination(a.output);  // before the forward pass
  Tensor logits = model.forward(ids);
  const float loss = causal_lm_loss(logits, ids);
  check_finite_loss(loss);  // before --output is written
  if (!a.output.empty()) {
    std::vector<float> host = logits.to_vector<float>();
    write_safetensors(a.output,
                      {{"logits", StDType::F32, logits.shape(),
                        {reinterpret_cast<const std::byte*>(host.data()), host.size() * sizeof(float)}},
                       {"loss", StDType::F32, {1}, {reinterpret_cast<const std::byte*>(&loss), sizeof(float)}}});
  }
  if (a.json)
    std::printf("%s\n", nlohmann::json{{"loss", loss},
                                       {"perplexity", std::exp(double(loss))},
                                       {"tokens", ids.dim(0) * (ids.dim(1) - 1)},
                                       {"device", dev.name()}}
                            .dump()
                            .c_str());
  else
    std::printf("loss %.6f  logits %s  device %s\n", loss, shape_str(logits.shape()).c_str(), dev.name().c_str());
}

void eval_text(const EvalArgs& a, const CausalLM& model, const std::filesystem::path& dir, const Device& dev) {
  const std::string text = text::read_text_file(a.text_file);
  if (text.empty()) throw ValueError("[eval] --text-file " + a.text_file + " is empty");
  const Tokenizer tok = a.tokenizer.empty() ? Tokenizer::from_dir(dir) : Tokenizer::from_path(a.tokenizer);
  const std::vector<uint32_t> ids = tok.encode(text);
  if (ids.size() < 2)
    throw ValueError("[eval] --text-file " + a.text_file + " holds " + std::to_string(ids.size()) +
                     " token(s); a loss needs at least 2");
  const PerplexityResult r = perplexity(model, ids, {a.ctx, a.stride});
  check_finite_loss(r.loss());
  if (a.json)
    std::printf("%s\n", nlohmann::json{{"loss", r.loss()},
                                       {"perplexity", r.perplexity()},
                                       {"nll_sum", r.nll_sum},
                                       {"tokens", r.tokens},
                                       {"text_tokens", ids.size()},
                                       {"windows", r.windows},
                                       {"ctx", r.context},
                                       {"stride", r.stride},
                                       {"device", dev.name()}}
                            .dump()
                            .c_str());
  else
    std::printf("loss %.6f  perplexity %.4f  tokens %lld scored of %zu  windows %lld (ctx %lld, stride %lld)  device %s\n",
                r.loss(), r.perplexity(), (long long)r.tokens, ids.size(), (long long)r.windows,
                (long long)r.context, (long long)r.stride, dev.name().c_str());
}

void run(const EvalArgs& a) {
  const Device dev = resolve_devices(a.device)[0];
  const std::filesystem::path dir = model_folder(a.model);
  std::unique_ptr<CausalLM> model = load_model_and_adapter(dir, dev, a.adapter, weights_dtype(a.dtype));
  if (!a.text_file.empty()) {
    const int64_t max_ctx = model->context_length();
    if (a.ctx == 1) throw UsageError("--ctx must be >= 2 (0: the model's context), got 1");
    if (a.ctx > max_ctx)
      throw UsageError("--ctx must be <= " + std::to_string(max_ctx) + " (the model's context), got " +
                       std::to_string(a.ctx));
    const int64_t ctx = a.ctx ? a.ctx : max_ctx;
    if (a.stride > ctx)
      throw UsageError("--stride must be <= " + std::to_string(ctx) + " (the context), got " + std::to_string(a.stride));
    eval_text(a, *model, dir, dev);
  } else {
    eval_input(a, *model, dev);
  }
}

const bool registered = register_command(
    {"eval", "Loss of a model on input_ids from a safetensors file, or perplexity over a text file",
     [](CLI::App& sub) {
       static EvalArgs a;
       sub.add_option("-m,--model", a.model, "Model folder, or a Hugging Face id org/name[@revision]")->required();
       sub.add_option("--adapter", a.adapter, "A LoRA adapter folder (PEFT layout) to apply to the model");
       add_dtype_option(sub, a.dtype);
       auto* input = sub.add_option("--input", a.input, "safetensors file holding input_ids [B, T] (forge tokenize --out)");
       auto* output = sub.add_option("--output", a.output, "With --input: safetensors file to write logits and loss to");
       auto* text = sub.add_option("--text-file", a.text_file, "Text file to compute loss and perplexity over");
       auto* tok = add_tokenizer_option(sub, a.tokenizer, "With --text-file: tokenizer (default: the model folder's)");
       auto* ctx = check_at_least(sub.add_option("--ctx", a.ctx, "With --text-file: ids per window (0: the model's context)"), 0);
       auto* stride = check_at_least(sub.add_option("--stride", a.stride, "With --text-file: ids between window starts (0: --ctx)"), 0);
       input->excludes(text);
       output->needs(input);
       tok->needs(text);
       ctx->needs(text);
       stride->needs(text);
       auto* source = sub.add_option_group("source", "what to evaluate");
       source->add_option(input);
       source->add_option(text);
       source->require_option(1);
       sub.add_flag("--json", a.json, "Print one JSON object: loss, perplexity, tokens, device (and windows, ctx, stride)");
       add_device_option(sub, a.device);
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
