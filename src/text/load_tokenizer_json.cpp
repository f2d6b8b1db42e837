// Hugging Face tokenizer.json -> TokenizerSpec. Only what byte-level BPE needs
// is accepted; any other setting that would change the ids is an IoError
// rather than a silently different tokenization.
#include "forge/error.h"
#include "text/tokenizer_spec.h"

namespace forge::text {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw IoError("[tokenizer] " + source + ": " + what);
}

std::string quoted(const std::filesystem::path& p) {
  std::string s(1, '\'');
  s.append(p.string()).push_back('\'');
  return s;
}

const char* const kGpt2Pattern =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

bool flag(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string type_of(const json& j) {
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string("?");
}

// Appends the steps of one pre-tokenizer; `byte_level` is set once ByteLevel is seen.
void parse_pre_tokenizer(const json& j, const std::string& source,
                         std::vector<PreTokenizeStep>& steps, bool& byte_level) {
  const std::string type = type_of(j);
  if (byte_level) fail(source, "pre-tokenizer '" + type + "' after ByteLevel is not supported");
  if (type == "Sequence") {
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) fail(source, "Sequence pre-tokenizer without a list");
    for (const auto& sub : *it) parse_pre_tokenizer(sub, source, steps, byte_level);
  } else if (type == "ByteLevel") {
    if (flag(j, "add_prefix_space", true)) steps.push_back(PreTokenizeStep::kPrefixSpace);
    if (flag(j, "use_regex", true)) steps.push_back(PreTokenizeStep::kGpt2Split);
    byte_level = true;
  } else if (type == "Digits") {
    steps.push_back(flag(j, "individual_digits", false) ? PreTokenizeStep::kDigits
                                                        : PreTokenizeStep::kDigitRuns);
  } else if (type == "Split") {
    const json pattern = j.value("pattern", json::object());
    const std::string regex = pattern.value("Regex", std::string());
    const std::string behavior = j.value("behavior", std::string());
    if (regex != kGpt2Pattern) {
      fail(source, "Split pre-tokenizer pattern '" + (regex.empty() ? pattern.dump() : regex) +
                       "' is not supported (only GPT-2's pattern is)");
    }
    if (behavior != "Isolated" || flag(j, "invert", false)) {
      fail(source, "Split pre-tokenizer with behavior '" + behavior +
                       "' / invert is not supported (only Isolated, not inverted)");
    }
    steps.push_back(PreTokenizeStep::kGpt2Split);
  } else {
    fail(source, "pre-tokenizer type '" + type + "' is not supported");
  }
}

StringMap<std::uint32_t> parse_vocab(const json& vocab, const std::string& source) {
  if (!vocab.is_object()) fail(source, "model.vocab is not an object of token -> id");
  StringMap<std::uint32_t> out;
  out.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it->is_number_unsigned()) {
      fail(source, "vocab id of '" + it.key() + "' is not a non-negative integer: " + it->dump());
    }
    out.emplace(it.key(), it->get<std::uint32_t>());
  }
  return out;
}

// Merges as "a b" strings or ["a", "b"] pairs.
std::vector<std::pair<std::string, std::string>> parse_merges(const json& merges,
                                                              const std::string& source) {
  if (!merges.is_array()) fail(source, "model.merges is not a list");
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const auto space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        fail(source, "merge " + std::to_string(i) + " '" + s + "' is not two tokens 'a b'");
      }
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(source, "merge " + std::to_string(i) + " is neither \"a b\" nor [\"a\", \"b\"]: " +
                       m.dump());
    }
  }
  return out;
}

void check_model_options(const json& model, const std::string& source) {
  if (flag(model, "byte_fallback", false)) fail(source, "BPE byte_fallback is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && it->is_string() && !it->get<std::string>().empty()) {
      fail(source, std::string("BPE ") + key + " is not supported");
    }
  }
  auto dropout = model.find("dropout");
  if (dropout != model.end() && dropout->is_number() && dropout->get<double>() > 0) {
    fail(source, "BPE dropout is not supported");
  }
}

std::vector<AddedToken> parse_added_tokens(const json& root, const std::string& source) {
  std::vector<AddedToken> out;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return out;
  if (!it->is_array()) fail(source, "added_tokens is not a list");
  for (const auto& t : *it) {
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string() ||
        !t.contains("id") || !t["id"].is_number_unsigned()) {
      fail(source, "added token without string content and integer id: " + t.dump());
    }
    out.push_back(AddedToken{t["content"].get<std::string>(), t["id"].get<std::uint32_t>(),
                             flag(t, "special", false), flag(t, "lstrip", false),
                             flag(t, "rstrip", false), flag(t, "single_word", false)});
  }
  return out;
}

}  // namespace

namespace {

TokenizerSpec parse_tokenizer_json(const json& root, const std::filesystem::path& path) {
  TokenizerSpec spec;
  spec.source = quoted(path);
  const std::string& src = spec.source;
  if (!root.is_object()) fail(src, "top level is not a JSON object");
  auto model = root.find("model");
  if (model == root.end() || !model->is_object()) fail(src, "no \"model\" object");
  const std::string type = model->value("type", std::string("BPE"));
  if (type != "BPE") fail(src, "model type '" + type + "' is not supported (only BPE)");
  if (!model->contains("vocab")) fail(src, "model has no \"vocab\"");
  if (!model->contains("merges")) fail(src, "model has no \"merges\"");
  check_model_options(*model, src);
  spec.bpe.vocab = parse_vocab((*model)["vocab"], src);
  spec.bpe.merges = parse_merges((*model)["merges"], src);
  spec.bpe.ignore_merges = flag(*model, "ignore_merges", false);
  if (auto unk = model->find("unk_token"); unk != model->end() && unk->is_string()) {
    spec.bpe.unk_token = unk->get<std::string>();
  }
  spec.added = parse_added_tokens(root, src);

  if (auto norm = root.find("normalizer"); norm != root.end() && !norm->is_null()) {
    fail(src, "normalizer '" + type_of(*norm) + "' is not supported");
  }
  bool byte_level = false;
  if (auto pre = root.find("pre_tokenizer"); pre != root.end() && !pre->is_null()) {
    parse_pre_tokenizer(*pre, src, spec.pre_steps, byte_level);
  }
  if (!byte_level) fail(src, "no ByteLevel pre-tokenizer: only byte-level BPE is supported");
  auto decoder = root.find("decoder");
  if (decoder == root.end() || decoder->is_null() || type_of(*decoder) != "ByteLevel") {
    const std::string got = decoder == root.end() || decoder->is_null() ? "none" : type_of(*decoder);
    fail(src, "decoder '" + got + "' is not supported (only ByteLevel)");
  }
  return spec;
}

}  // namespace

TokenizerSpec load_tokenizer_json(const std::filesystem::path& path) {
  const json root = read_json_file(path);
  try {
    return parse_tokenizer_json(root, path);
  } catch (const json::exception& e) {
    // A value of an unexpected JSON type met by value() or get() (the checks
    // above name the common ones): still the file's fault, not forge's.
    fail(quoted(path), std::string("a value has the wrong JSON type (") + e.what() + ")");
  }
}

}  // namespace forge::text
