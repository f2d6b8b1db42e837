// Writing a model folder (quantize, merge, a fine-tuned model): built whole in
// a temporary folder beside the destination and moved into place at the end,
// so a failure (a full disk, a bad tensor) leaves no half-written model.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace forge::io {

// The files beside the weights that a rewritten model keeps: generation
// settings, the tokenizer in either form, the chat template.
const std::vector<std::string>& model_side_files();

// Copies those of model_side_files() that `src` holds into `dst`.
void copy_model_side_files(const std::filesystem::path& src, const std::filesystem::path& dst);

// Writes `text` to `path` whole or not at all (under a temporary name beside
// it, renamed over it), or throws IoError naming the file.
void write_text_file(const std::filesystem::path& path, const std::string& text);

// Throws IoError naming the path when `dst` cannot be a folder: it, or the
// nearest of its parents that exists, is a file. Commands that write a folder
// call it before their work, so that a wrong --out fails at once.
void check_folder_destination(const std::filesystem::path& dst);

// Throws IoError naming the path when a file cannot be written at `path`: it
// is a folder, or its folder is missing or is a file. For --output files,
// checked before the work that fills them.
void check_file_destination(const std::filesystem::path& path);

// Runs fill(tmp) on an empty temporary folder beside `dst`, then moves what
// it wrote into `dst` (created when missing; other files in it stay). When
// fill throws, the temporary folder is removed and `dst` is as it was.
// check_folder_destination(dst) runs first.
// "out/" and "out" name the same folder; returns it as written ("out").
std::filesystem::path write_folder(const std::filesystem::path& dst,
                                   const std::function<void(const std::filesystem::path& tmp)>& fill);

}  // namespace forge::io
