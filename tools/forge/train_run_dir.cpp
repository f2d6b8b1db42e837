// Run folder housekeeping for `forge train` (see train_run_dir.h).
#include "train_run_dir.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forge/error.h"

namespace forge::cli {

namespace fs = std::filesystem;

namespace {
const char* const kRunFiles[] = {"checkpoint", "checkpoint.tmp", "checkpoint.old", "log.jsonl", "tokens.bin"};
}

bool holds_train_run(const fs::path& out) {
  for (const char* f : kRunFiles)
    if (fs::exists(out / f)) return true;
  return false;
}

void remove_train_run(const fs::path& out) {
  for (const char* f : kRunFiles) {
    std::error_code ec;
    fs::remove_all(out / f, ec);
    if (ec) throw IoError("[train] cannot remove '" + (out / f).string() + "': " + ec.message());
  }
}

int64_t cut_train_log(const fs::path& log, int64_t step) {
  std::ifstream in(log);
  if (!in) return 0;
  std::string kept, line;
  int64_t dropped = 0;
  // A training line {"step": s, "loss": ...} is step s (0-based) being done; an
  // evaluation line {"step": s, "val_loss": ...} comes after s steps.
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    const bool keep = j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
                      (j.contains("loss") ? j["step"].get<int64_t>() < step : j["step"].get<int64_t>() <= step);
    if (keep) kept += line + "\n";
    else ++dropped;
  }
  in.close();
  if (dropped == 0) return 0;
  const fs::path tmp = log.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kept;
    out.close();
    if (!out) throw IoError("[train] cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  fs::rename(tmp, log, ec);
  if (ec) throw IoError("[train] cannot rename '" + tmp.string() + "' to '" + log.string() + "': " + ec.message());
  return dropped;
}

}  // namespace forge::cli
