// forge init --arch gpt2 --preset 124M|355M|774M|1.5B|tiny --out DIR [--seed S] [--tokenizer FILE]:
// a randomly initialised checkpoint in the Hugging Face layout, so benchmarks
// and training runs need no download.
#include <cstdio>
#include <filesystem>

#include "command.h"
#include "forge/gpt2.h"

namespace forge::cli {
namespace {

struct InitArgs {
  std::string arch = "gpt2", preset, out, tokenizer;
  uint64_t seed = 0;
};

void run(const InitArgs& a) {
  if (a.arch != "gpt2") throw ValueError("[init] unknown --arch '" + a.arch + "' (known: gpt2)");
  const Gpt2Config config = gpt2_preset(a.preset);
  write_gpt2_checkpoint(a.out, config, gpt2_random_tensors(config, a.seed));
  if (!a.tokenizer.empty()) {
    std::error_code ec;
    std::filesystem::copy_file(a.tokenizer, std::filesystem::path(a.out) / "tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) throw IoError("[init] cannot copy tokenizer '" + a.tokenizer + "': " + ec.message());
  }
  std::printf("wrote %s (gpt2 %s, seed %llu)\n", a.out.c_str(), a.preset.c_str(), (unsigned long long)a.seed);
}

const bool registered = register_command(
    {"init", "Write a randomly initialised model checkpoint (Hugging Face layout)", [](CLI::App& sub) {
       static InitArgs a;
       sub.add_option("--arch", a.arch, "Architecture (gpt2)")->capture_default_str();
       sub.add_option("--preset", a.preset, "Size: 124M, 355M, 774M, 1.5B or tiny")->required();
       sub.add_option("--out", a.out, "Output folder")->required();
       sub.add_option("--seed", a.seed, "Random seed")->capture_default_str();
       sub.add_option("--tokenizer", a.tokenizer, "A tokenizer.json to copy into the folder")->check(CLI::ExistingFile);
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
