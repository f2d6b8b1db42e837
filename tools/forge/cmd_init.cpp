// forge init --arch gpt2 --preset 124M|355M|774M|1.5B|tiny --out DIR [--seed S] [--tokenizer FILE|DIR|bytes]
// forge init --config CONFIG.json --out DIR [--seed S] [--tokenizer FILE|DIR]:
// a randomly initialised checkpoint in the Hugging Face layout, so benchmarks
// and training runs need no download; a Llama-family model (any config.json
// forge loads: Llama, SmolLM2, Qwen2, Mistral) takes its shape from --config.
// --tokenizer bytes gives a GPT-2 the byte tokenizer (and a vocab of 257).
#include <cstdio>
#include <filesystem>

#include "byte_tokenizer.h"
#include "cli_util.h"
#include "command.h"
#include "forge/gpt2.h"
#include "forge/model.h"
#include "forge/safetensors.h"
#include "io/model_folder.h"

namespace forge::cli {
namespace {

struct InitArgs {
  std::string arch = "gpt2", preset, config, out, tokenizer;
  uint64_t seed = 0;
};

void copy_tokenizer(const InitArgs& a, const std::filesystem::path& out) {
  const std::filesystem::path dest = out / "tokenizer.json";
  std::error_code ec;
  std::filesystem::copy_file(tokenizer_json_path(a.tokenizer), dest, std::filesystem::copy_options::overwrite_existing,
                             ec);
  if (ec) throw IoError("[init] cannot copy tokenizer '" + a.tokenizer + "': " + ec.message());
}

// config.json as given, and model.safetensors, into a new folder.
void write_config_model(const InitArgs& a) {
  const ModelConfig config = load_config(a.config);
  if (config.arch == Arch::Gpt2)
    throw UsageError("--config names a GPT-2: use --arch gpt2 --preset (GPT-2's own initialisation)");
  const std::vector<std::byte> weights = random_checkpoint_bytes(config, a.seed);
  io::write_folder(a.out, [&](const std::filesystem::path& out) {
    std::error_code ec;
    const std::filesystem::space_info disk = std::filesystem::space(out, ec);
    if (!ec && disk.available < weights.size())
      throw IoError("[init] model.safetensors takes " + std::to_string(weights.size() / 1000000) + " MB and '" +
                    out.string() + "' has " + std::to_string(disk.available / 1000000) + " MB free");
    std::filesystem::copy_file(a.config, out / "config.json", std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) throw IoError("[init] cannot copy '" + a.config + "': " + ec.message());
    write_safetensors_bytes(out / "model.safetensors", weights);
    if (!a.tokenizer.empty()) copy_tokenizer(a, out);
  });
}

void write_gpt2_model(const InitArgs& a) {
  Gpt2Config config = gpt2_preset(a.preset);
  if (a.tokenizer == "bytes") config.vocab_size = kByteVocabSize;
  const std::vector<Gpt2HostTensor> tensors = gpt2_random_tensors(config, a.seed);
  io::write_folder(a.out, [&](const std::filesystem::path& out) {
    write_gpt2_checkpoint(out, config, tensors);
    if (a.tokenizer == "bytes") {
      io::write_text_file(out / "tokenizer.json", byte_tokenizer_json());
      set_special_token_ids(out, kByteEos);
    } else if (!a.tokenizer.empty()) {
      copy_tokenizer(a, out);
    }
  });
}

void run(const InitArgs& a) {
  if (a.config.empty()) {
    if (a.arch != "gpt2") throw UsageError("unknown --arch '" + a.arch + "' (known: gpt2; other families: --config)");
    if (a.preset.empty()) throw UsageError("--arch gpt2 needs --preset (or give --config CONFIG.json)");
  } else if (!a.preset.empty()) {
    throw UsageError("--preset and --config exclude each other");
  }
  if (!a.config.empty() && a.tokenizer == "bytes")
    throw UsageError("--tokenizer bytes is for GPT-2 models (--arch gpt2)");
  io::check_folder_destination(a.out);  // before drawing the weights
  // The weights are drawn first (the long part, and where a shape too large
  // is refused), then written whole or not at all: an init stopped or failing
  // at any point leaves --out as it was.
  if (a.config.empty()) write_gpt2_model(a);
  else write_config_model(a);
  std::printf("wrote %s (%s, seed %llu)\n", a.out.c_str(),
              a.config.empty() ? ("gpt2 " + a.preset).c_str() : ("the shape of " + a.config).c_str(),
              (unsigned long long)a.seed);
}

const bool registered = register_command(
    {"init", "Write a randomly initialised model checkpoint (Hugging Face layout)", [](CLI::App& sub) {
       static InitArgs a;
       sub.add_option("--arch", a.arch, "Architecture (gpt2)")->capture_default_str();
       add_preset_option(sub, a.preset, "GPT-2 size");
       sub.add_option("--config", a.config, "A Llama-family config.json giving the shape")->check(CLI::ExistingFile);
       sub.add_option("--out", a.out, "Output folder")->required();
       check_unsigned(sub.add_option("--seed", a.seed, "Random seed")->capture_default_str());
       add_tokenizer_option(sub, a.tokenizer, "A tokenizer (file or folder) to copy into the folder, or 'bytes'", true);
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
