// vocab.json + merges.txt (or GPT-2's original encoder.json + vocab.bpe) -> TokenizerSpec.
#include "forge/error.h"
#include "text/tokenizer_spec.h"

namespace forge::text {

namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw IoError("[tokenizer] '" + file.string() + "': " + what);
}

StringMap<std::uint32_t> parse_vocab_json(const std::filesystem::path& path) {
  const nlohmann::json j = read_json_file(path);
  if (!j.is_object()) fail(path, "not a JSON object of token -> id");
  StringMap<std::uint32_t> vocab;
  vocab.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    vocab.emplace(it.key(), json_token_id(*it, "'" + path.string() + "'", "id of '" + it.key() + "'"));
  }
  return vocab;
}

std::vector<std::pair<std::string, std::string>> parse_merges_txt(
    const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  std::vector<std::pair<std::string, std::string>> merges;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos) {
      fail(path, "line " + std::to_string(line_no) + " '" + line + "' is not two tokens 'a b'");
    }
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

}  // namespace

TokenizerSpec load_vocab_merges(const std::filesystem::path& vocab,
                                const std::filesystem::path& merges) {
  TokenizerSpec spec;
  spec.source = std::string(1, '\'');
  spec.source.append(vocab.string()).append("' + '").append(merges.filename().string());
  spec.source.push_back('\'');
  spec.bpe.vocab = parse_vocab_json(vocab);
  spec.bpe.merges = parse_merges_txt(merges);
  spec.pre_steps = {PreTokenizeStep::of(PreTokenizeStep::Kind::kByteLevel)};
  spec.decoder = Decoder({ByteLevelDecode{}});
  if (auto it = spec.bpe.vocab.find("<|endoftext|>"); it != spec.bpe.vocab.end()) {
    spec.added.push_back(AddedToken{it->first, it->second, true});
  }
  return spec;
}

}  // namespace forge::text
