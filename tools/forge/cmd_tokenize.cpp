// forge tokenize (--model DIR | --tokenizer FILE|DIR) (--text TEXT | --text-file F) [--no-special] [--json]
//   [--out IN.safetensors [--batch]]
//   --out writes input_ids i32 [1, T] for `forge eval --input` (with --batch:
//   [B, T], one row per non-empty line, all of one length) and prints its shape.
// forge detokenize (--model DIR | --tokenizer FILE|DIR) --ids 1,2,3 [--skip-special] [--json]
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "command.h"
#include "forge/error.h"
#include "forge/safetensors.h"
#include "forge/tokenizer.h"
#include "text/tokenizer_spec.h"

namespace forge::cli {
namespace {

// --model / --tokenizer: exactly one, both filling `path`.
void add_tokenizer_options(CLI::App& sub, std::string& path) {
  auto* group = sub.add_option_group("tokenizer", "where the tokenizer is");
  group->add_option("-m,--model", path, "Model folder (tokenizer.json or vocab.json + merges.txt)")
      ->check(CLI::ExistingDirectory);
  group->add_option("--tokenizer", path, "A tokenizer.json file or a folder holding one")
      ->check(CLI::ExistingPath);
  group->require_option(1);
}

struct TokenizeArgs {
  std::string tokenizer, text, text_file, out;
  bool no_special = false;
  bool json = false;
  bool batch = false;
};

// The rows of input_ids: the whole text, or with --batch one per non-empty line.
std::vector<std::vector<std::uint32_t>> encode_rows(const Tokenizer& tok, const std::string& text, const TokenizeArgs& a) {
  std::vector<std::vector<std::uint32_t>> rows;
  if (!a.batch) {
    rows.push_back(tok.encode(text, !a.no_special));
  } else {
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t end = std::min(text.find('\n', pos), text.size());
      std::string line = text.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) rows.push_back(tok.encode(line, !a.no_special));
      pos = end + 1;
    }
    if (rows.empty()) throw ValueError("[tokenize] --batch found no non-empty line");
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != rows[0].size())
      throw ValueError("[tokenize] --batch rows must have one length: line " + std::to_string(r + 1) + " has " +
                       std::to_string(rows[r].size()) + " tokens, line 1 has " + std::to_string(rows[0].size()));
    for (std::uint32_t id : rows[r])
      if (id > 0x7FFFFFFFu) throw ValueError("[tokenize] id " + std::to_string(id) + " does not fit input_ids (i32)");
  }
  if (rows[0].empty()) throw ValueError("[tokenize] the text encodes to no tokens; nothing to write to " + a.out);
  return rows;
}

// input_ids i32 [B, T] to `path` (written beside it and renamed over it).
void write_input_ids(const std::string& path, const std::vector<std::vector<std::uint32_t>>& rows) {
  std::vector<std::int32_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  const std::vector<int64_t> shape{int64_t(rows.size()), int64_t(rows[0].size())};
  write_safetensors(path, {{"input_ids", StDType::I32, shape,
                            {reinterpret_cast<const std::byte*>(flat.data()), flat.size() * sizeof(std::int32_t)}}});
}

void tokenize(const TokenizeArgs& a) {
  const Tokenizer tok = Tokenizer::from_path(a.tokenizer);
  const std::string text = a.text_file.empty() ? a.text : text::read_text_file(a.text_file);
  if (!a.out.empty()) {
    const auto rows = encode_rows(tok, text, a);
    write_input_ids(a.out, rows);
    if (a.json)
      std::cout << nlohmann::json{{"out", a.out}, {"shape", {rows.size(), rows[0].size()}}}.dump() << "\n";
    else
      std::cout << "wrote input_ids [" << rows.size() << ", " << rows[0].size() << "] i32 to " << a.out << "\n";
    return;
  }
  const std::vector<std::uint32_t> ids = tok.encode(text, !a.no_special);
  if (a.json) {
    std::cout << nlohmann::json{{"ids", ids}}.dump() << "\n";
    return;
  }
  for (std::size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
}

struct DetokenizeArgs {
  std::string tokenizer;
  std::vector<std::string> ids;  // "1,2,3", or "1 2 3" as one or several arguments
  bool skip_special = false;
  bool json = false;
};

void detokenize(const DetokenizeArgs& a) {
  const Tokenizer tok = Tokenizer::from_path(a.tokenizer);
  std::string joined;
  for (const auto& part : a.ids) joined += part + " ";
  const std::string text = tok.decode(parse_id_list(joined, "--ids", /*allow_none=*/true), a.skip_special);
  if (a.json) {
    std::cout << nlohmann::json{{"text", text}}.dump() << "\n";
  } else {
    std::cout << text << "\n";
  }
}

const bool registered_tokenize = register_command(
    {"tokenize", "Print the token ids of a text", [](CLI::App& sub) {
       auto args = std::make_shared<TokenizeArgs>();
       add_tokenizer_options(sub, args->tokenizer);
       auto* text = may_be_empty(sub.add_option("--text", args->text, "Text to encode"));
       auto* file = sub.add_option("--text-file", args->text_file, "File whose text to encode")
                        ->check(CLI::ExistingFile);
       text->excludes(file);
       auto* group = sub.add_option_group("input");
       group->add_option(text);
       group->add_option(file);
       group->require_option(1);
       sub.add_flag("--no-special", args->no_special,
                    "Leave out the post-processor's special tokens (such as BOS)");
       sub.add_flag("--json", args->json, "Print {\"ids\": [...]} (with --out: {\"out\", \"shape\"})");
       auto* out = sub.add_option("--out", args->out, "Write input_ids i32 [1, T] to this safetensors file (for forge eval --input)");
       sub.add_flag("--batch", args->batch, "With --out: one row per non-empty line, [B, T] (rows of one length)")->needs(out);
       sub.callback([args] { tokenize(*args); });
     }});

const bool registered_detokenize = register_command(
    {"detokenize", "Print the text of token ids", [](CLI::App& sub) {
       auto args = std::make_shared<DetokenizeArgs>();
       add_tokenizer_options(sub, args->tokenizer);
       may_be_empty(sub.add_option("--ids", args->ids, "Token ids, comma or space separated")
                        ->required()
                        ->expected(1, -1));
       sub.add_flag("--skip-special", args->skip_special, "Leave special tokens out of the text");
       sub.add_flag("--json", args->json, "Print {\"text\": \"...\"}");
       sub.callback([args] { detokenize(*args); });
     }});

}  // namespace
}  // namespace forge::cli
