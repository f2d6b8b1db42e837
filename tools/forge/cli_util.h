// Conventions shared by every forge command, so the same thing is spelled and
// checked the same way everywhere:
//
//   exit codes   0 ok, 1 runtime error (forge::Error and other exceptions),
//                2 usage error (UsageError, CLI11 parse errors),
//                128 + signal when a run stops on SIGINT / SIGTERM (ExitCode)
//   messages     one line on stderr: "forge: error: ..." (printed by main.cpp)
//   short forms  -m --model, -p --prompt, -n (a count, such as --max-new-tokens)
//   --preset     124M, 355M, 774M, 1.5B or tiny (add_preset_option)
//   id lists     "1,2,3", "1 2 3" or "1, 2, 3" (what `forge tokenize` prints)
//   other lists  "8,32" or "8, 32"; no empty items (add_list_option, add_int_list_option)
//   ranges       "--steps must be >= 1, got -5" (check_at_least, check_int_between, check_between)
//   --tokenizer  a tokenizer.json, a folder holding one, or 'bytes' where allowed
//   --model      a model folder; check_model_dir says what else the path is
#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "forge/tensor.h"

namespace forge::cli {

// A command used wrongly (a bad or contradicting flag): exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Ends the program with `code` after the command has said why (an interrupted
// training run exits with 130 for SIGINT, 143 for SIGTERM).
struct ExitCode {
  int code;
};

// Token ids separated by commas and/or whitespace. `flag` names the option in
// the UsageError for an item that is not an id in [0, 2^32), an empty item
// between commas, or (unless allow_none) no id at all.
std::vector<uint32_t> parse_id_list(const std::string& text, const std::string& flag, bool allow_none = false);

// input_ids [B, T] (I32 or I64, T >= 2) of a safetensors file as u32, every
// id checked against the vocabulary: what `eval --input` and `train
// --fixed-batch` read. Errors start "[who] " and name the file.
forge::Tensor read_input_ids(const std::string& path, int64_t vocab, const std::string& who);

// Validators with readable messages: "-n must be >= 0, got -5" (named by the
// option's short form when it has one), "--steps must be an integer, got 'x'".
// check_at_least and check_int_between are for integer options,
// check_between for real ones (no upper bound when hi is infinite).
CLI::Option* check_at_least(CLI::Option* opt, int64_t min);
CLI::Option* check_int_between(CLI::Option* opt, int64_t lo, int64_t hi);
// Lists: items separated by commas, spaces around them allowed, in one value
// or several ("--rows 8,32", "--rows 8, 32", "--rows 8 --rows 32"). An empty
// item ("8,,2", ",8", "8,") is a usage error naming the flag, where CLI11's
// own delimiter would drop it. split_list throws UsageError; the options
// below check every item while parsing (an integer >= at_least, or one of
// `allowed` when that is not empty) and then fill `out` with the items given.
std::vector<std::string> split_list(const std::string& text, const std::string& flag);
CLI::Option* add_list_option(CLI::App& app, const std::string& name, std::vector<std::string>& out,
                             const std::string& help, const std::vector<std::string>& allowed = {});
CLI::Option* add_int_list_option(CLI::App& app, const std::string& name, std::vector<int64_t>& out,
                                 const std::string& help, int64_t at_least);

// One of a few integers: "--bits must be 2, 4 or 8, got 3".
CLI::Option* check_int_in(CLI::Option* opt, const std::vector<int64_t>& allowed);
// An unsigned 64-bit option (a seed): "-1" is refused, not wrapped around.
CLI::Option* check_unsigned(CLI::Option* opt);
CLI::Option* check_between(CLI::Option* opt, double lo, double hi = HUGE_VAL);

// An option given an empty value ("--temperature ''", as a script's unset
// variable gives) is a usage error, "--temperature needs a value, got an empty
// string", rather than read as absent or as zero: refuse_empty_values adds
// that check to every option of `app` and its subcommands that takes a
// value, except those marked may_be_empty (an empty text to tokenize, an
// empty system prompt).
CLI::Option* may_be_empty(CLI::Option* opt);
void refuse_empty_values(CLI::App& app);

// --preset NAME: a GPT-2 size gpt2_preset knows (a usage error naming the known
// ones otherwise). `names` may add an alias: "--preset,--init".
CLI::Option* add_preset_option(CLI::App& app, std::string& value, const std::string& help,
                               const std::string& names = "--preset");

// --tokenizer FILE|DIR (and 'bytes' when allow_bytes): the path must exist.
CLI::Option* add_tokenizer_option(CLI::App& app, std::string& value, const std::string& help,
                                  bool allow_bytes = false);
// The tokenizer.json a --tokenizer value names (the file, or DIR/tokenizer.json);
// IoError when a folder holds none.
std::filesystem::path tokenizer_json_path(const std::filesystem::path& file_or_dir);

// A model folder given as `flag` (config.json + safetensors): returns it, or
// throws an IoError that says what the path is instead: missing, a file (with
// its folder suggested), a training run (with its checkpoint/ suggested), or a
// folder without config.json.
std::filesystem::path check_model_dir(const std::string& path, const std::string& flag = "--model");

// The files a --data list names, a folder standing for the text files in it
// (recursively, in name order; hidden files and files with a NUL byte in
// their first 8 KB are skipped). IoError for a missing path or a folder
// without text files.
std::vector<std::string> expand_text_files(const std::vector<std::string>& paths, const std::string& flag);

}  // namespace forge::cli
