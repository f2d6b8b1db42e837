// Writing a training checkpoint folder atomically (see train_checkpoint.h).
#include "train_checkpoint.h"

namespace forge::cli {

void save_train_checkpoint(const std::filesystem::path& dir, const Gpt2& model, const Gpt2Trainer& trainer,
                           const std::filesystem::path& tokenizer_file,
                           const std::map<std::string, std::string>& extra) {
  namespace fs = std::filesystem;
  const fs::path tmp = dir.string() + ".tmp", old = dir.string() + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  write_gpt2_checkpoint(tmp, model.config(), trainer.host_weights());
  write_gpt2_train_state(tmp, trainer, extra);
  if (!tokenizer_file.empty()) {
    fs::copy_file(tokenizer_file, tmp / tokenizer_file.filename(), fs::copy_options::overwrite_existing, ec);
    if (ec) throw IoError("[train] cannot copy the tokenizer into '" + tmp.string() + "': " + ec.message());
  }
  fs::remove_all(old, ec);
  if (fs::exists(dir)) {
    fs::rename(dir, old, ec);
    if (ec) throw IoError("[train] cannot move '" + dir.string() + "' aside: " + ec.message());
  }
  fs::rename(tmp, dir, ec);
  if (ec) throw IoError("[train] cannot rename '" + tmp.string() + "' to '" + dir.string() + "': " + ec.message());
  fs::remove_all(old, ec);
}

}  // namespace forge::cli
