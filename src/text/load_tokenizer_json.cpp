// Hugging Face tokenizer.json -> TokenizerSpec: the BPE model and added tokens
// here, the pipeline components in load_components.cpp. Any setting that would
// change the ids and is not implemented is an IoError rather than a silently
// different tokenization.
#include "forge/error.h"
#include "text/load_components.h"
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

bool flag(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

StringMap<std::uint32_t> parse_vocab(const json& vocab, const std::string& source) {
  if (!vocab.is_object()) fail(source, "model.vocab is not an object of token -> id");
  StringMap<std::uint32_t> out;
  out.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    out.emplace(it.key(), json_token_id(*it, source, "vocab id of '" + it.key() + "'"));
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
    const bool special = flag(t, "special", false);
    const std::uint32_t id = json_token_id(t["id"], source, "added token id");
    out.push_back(AddedToken{t["content"].get<std::string>(), id, special,
                             flag(t, "lstrip", false), flag(t, "rstrip", false),
                             flag(t, "single_word", false), flag(t, "normalized", !special)});
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

  spec.bpe.byte_fallback = flag(*model, "byte_fallback", false);
  spec.bpe.fuse_unk = flag(*model, "fuse_unk", false);
  auto component = [&](const char* key) {
    auto it = root.find(key);
    return it == root.end() ? json() : *it;
  };
  spec.normalizer = parse_normalizer(component("normalizer"), src);
  spec.pre_steps = parse_pre_tokenizer(component("pre_tokenizer"), src);
  spec.decoder = parse_decoder(component("decoder"), src);
  spec.post = parse_post_processor(component("post_processor"), src, [&](const std::string& name) {
    for (const auto& t : spec.added) {
      if (t.content == name) return t.id;
    }
    auto it = spec.bpe.vocab.find(name);
    if (it == spec.bpe.vocab.end())
      fail(src, "post-processor token '" + name + "' is not in the vocab");
    return it->second;
  });
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
