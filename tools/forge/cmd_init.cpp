// forge init --arch gpt2 --preset 124M|355M|774M|1.5B|tiny --out DIR [--seed S] [--tokenizer FILE|DIR|bytes]:
// a randomly initialised checkpoint in the Hugging Face layout, so benchmarks
// and training runs need no download. --tokenizer bytes gives the model the
// byte tokenizer (and a vocab of 257).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "byte_tokenizer.h"
#include "cli_util.h"
#include "command.h"
#include "forge/gpt2.h"

namespace forge::cli {
namespace {

struct InitArgs {
  std::string arch = "gpt2", preset, out, tokenizer;
  uint64_t seed = 0;
};

void write_model(const InitArgs& a) {
  Gpt2Config config = gpt2_preset(a.preset);
  if (a.tokenizer == "bytes") config.vocab_size = kByteVocabSize;
  write_gpt2_checkpoint(a.out, config, gpt2_random_tensors(config, a.seed));
  const std::filesystem::path dest = std::filesystem::path(a.out) / "tokenizer.json";
  if (a.tokenizer == "bytes") {
    std::ofstream f(dest, std::ios::binary);
    f << byte_tokenizer_json();
    f.close();
    if (!f) throw IoError("[init] cannot write '" + dest.string() + "'");
    set_special_token_ids(a.out, kByteEos);
  } else if (!a.tokenizer.empty()) {
    std::error_code ec;
    std::filesystem::copy_file(tokenizer_json_path(a.tokenizer), dest,
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) throw IoError("[init] cannot copy tokenizer '" + a.tokenizer + "': " + ec.message());
  }
}

void run(const InitArgs& a) {
  if (a.arch != "gpt2") throw UsageError("unknown --arch '" + a.arch + "' (known: gpt2)");
  const bool fresh = !std::filesystem::exists(a.out);
  try {
    write_model(a);
  } catch (...) {
    // A new folder goes again (a full disk, say); an existing one keeps its
    // model.safetensors, which is replaced only once whole.
    std::error_code ec;
    if (fresh) std::filesystem::remove_all(a.out, ec);
    throw;
  }
  std::printf("wrote %s (gpt2 %s, seed %llu)\n", a.out.c_str(), a.preset.c_str(), (unsigned long long)a.seed);
}

const bool registered = register_command(
    {"init", "Write a randomly initialised model checkpoint (Hugging Face layout)", [](CLI::App& sub) {
       static InitArgs a;
       sub.add_option("--arch", a.arch, "Architecture (gpt2)")->capture_default_str();
       add_preset_option(sub, a.preset, "Model size")->required();
       sub.add_option("--out", a.out, "Output folder")->required();
       sub.add_option("--seed", a.seed, "Random seed")->capture_default_str();
       add_tokenizer_option(sub, a.tokenizer, "A tokenizer (file or folder) to copy into the folder, or 'bytes'", true);
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
