// forge quantize --model DIR --bits 2|4|8 [--group-size 64] --out DIR:
// writes an MLX affine-quantized copy of a GPT-2 or Llama-family model folder (weights
// u32, scales and biases 16-bit, "quantization" in config.json, tokenizer
// files copied) that forge and mlx-lm load.
#include <cstdio>
#include <filesystem>

#include "cli_util.h"
#include "command.h"
#include "forge/quantize.h"
#include "model_arg.h"

namespace forge::cli {
namespace {

struct QuantizeArgs {
  std::string model, out;
  int bits = 4, group_size = 64;
};

const bool registered = register_command(
    {"quantize", "Write an MLX 2/4/8-bit quantized copy of a model folder", [](CLI::App& sub) {
       static QuantizeArgs a;
       sub.add_option("-m,--model", a.model, "Model folder with dense weights (f32, bf16 or f16)")->required();
       check_int_in(sub.add_option("--bits", a.bits, "Bits per weight: 2, 4 or 8")->capture_default_str(), {2, 4, 8});
       check_int_in(sub.add_option("--group-size", a.group_size, "Weights sharing one scale and bias: 32, 64 or 128")
                        ->capture_default_str(),
                    {32, 64, 128});
       sub.add_option("--out", a.out, "Folder to write (must not exist, or be empty)")->required();
       sub.callback([] {
         const uint64_t bytes = quantize_model(model_folder(a.model), a.out, QuantSpec{a.group_size, a.bits});
         std::printf("wrote %s: %d-bit, group %d, %.1f MB of weights\n", a.out.c_str(), a.bits, a.group_size,
                     double(bytes) / 1e6);
       });
     }});

}  // namespace
}  // namespace forge::cli
