// The run folder of `forge train` (--out): tokens.bin, log.jsonl and the
// checkpoint folders, and what starting over or resuming does to them.
#pragma once
#include <cstdint>
#include <filesystem>

namespace forge::cli {

// Whether `out` holds files of a run (a checkpoint, log.jsonl or tokens.bin).
bool holds_train_run(const std::filesystem::path& out);
// Removes those files (and nothing else: --out may be a folder with other files).
void remove_train_run(const std::filesystem::path& out);

// Cuts log.jsonl back to a checkpoint at `step`: keeps the training lines of
// steps before it and the evaluations up to it, drops the rest (and a line cut
// short by a crash). Returns the number of lines dropped.
int64_t cut_train_log(const std::filesystem::path& log, int64_t step);

}  // namespace forge::cli
