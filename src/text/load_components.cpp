#include "text/load_components.h"

#include "forge/error.h"
#include "text/tokenizer_spec.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw IoError("[tokenizer] " + source + ": " + what);
}

const char* const kGpt2Pattern =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

bool flag(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string str(const json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string type_of(const json& j, const std::string& source, const char* what) {
  if (!j.is_object()) fail(source, std::string(what) + " is not an object: " + j.dump());
  auto it = j.find("type");
  if (it == j.end() || !it->is_string())
    fail(source, std::string(what) + " without a \"type\": " + j.dump());
  return it->get<std::string>();
}

const json& list(const json& j, const char* key, const std::string& source,
                 const std::string& type) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) fail(source, type + " without a \"" + key + "\" list");
  return *it;
}

// {"String": s} or {"Regex": r}.
Pattern parse_pattern(const json& j, const std::string& source, const std::string& type) {
  if (j.is_object() && j.contains("String") && j["String"].is_string()) {
    return Pattern::literal(j["String"].get<std::string>());
  }
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
    try {
      return Pattern::regex(j["Regex"].get<std::string>());
    } catch (const ValueError& e) {
      fail(source, type + " pattern: " + e.what());
    }
  }
  fail(source, type + " pattern is neither {\"String\": ...} nor {\"Regex\": ...}: " + j.dump());
}

SplitBehavior parse_behavior(const json& j, const std::string& source,
                             const std::string& fallback) {
  const std::string b = str(j, "behavior", fallback);
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  fail(source, "split behavior '" + b +
                   "' is not one of Removed, Isolated, MergedWithPrevious, "
                   "MergedWithNext, Contiguous");
}

// Metaspace's settings, old (add_prefix_space) and new (prepend_scheme) forms.
PrependScheme parse_prepend_scheme(const json& j, const std::string& source) {
  auto it = j.find("prepend_scheme");
  if (it == j.end() || it->is_null()) {
    return flag(j, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
  }
  const std::string s = it->is_string() ? it->get<std::string>() : it->dump();
  if (s == "first") return PrependScheme::kFirst;
  if (s == "always") return PrependScheme::kAlways;
  if (s == "never") return PrependScheme::kNever;
  fail(source, "Metaspace prepend_scheme '" + s + "' is not first, always or never");
}

std::string replacement_char(const json& j, const std::string& source) {
  const std::string r = str(j, "replacement", "\xE2\x96\x81");
  if (r.empty() || utf8_next(r, 0).len != r.size()) {
    fail(source, "Metaspace replacement '" + r + "' is not one character");
  }
  return r;
}

void add_normalizer(const json& j, const std::string& source, std::vector<NormalizerStep>& out) {
  const std::string type = type_of(j, source, "normalizer");
  if (type == "Sequence") {
    for (const auto& sub : list(j, "normalizers", source, type)) add_normalizer(sub, source, out);
  } else if (type == "NFC") {
    out.push_back(NormalizeForm{NormalForm::kNfc});
  } else if (type == "NFD") {
    out.push_back(NormalizeForm{NormalForm::kNfd});
  } else if (type == "NFKC") {
    out.push_back(NormalizeForm{NormalForm::kNfkc});
  } else if (type == "NFKD") {
    out.push_back(NormalizeForm{NormalForm::kNfkd});
  } else if (type == "Lowercase") {
    out.push_back(Lowercase{});
  } else if (type == "Prepend") {
    out.push_back(Prepend{str(j, "prepend", "")});
  } else if (type == "Replace") {
    out.push_back(
        Replace{parse_pattern(j.value("pattern", json()), source, type), str(j, "content", "")});
  } else if (type == "Strip") {
    out.push_back(Strip{flag(j, "strip_left", true), flag(j, "strip_right", true)});
  } else {
    fail(source, "normalizer type '" + type + "' is not supported");
  }
}

void add_pre_tokenizer(const json& j, const std::string& source,
                       std::vector<PreTokenizeStep>& out) {
  using K = PreTokenizeStep::Kind;
  const std::string type = type_of(j, source, "pre-tokenizer");
  if (type == "Sequence") {
    for (const auto& sub : list(j, "pretokenizers", source, type))
      add_pre_tokenizer(sub, source, out);
    return;
  }
  PreTokenizeStep s;
  if (type == "ByteLevel") {
    s.kind = K::kByteLevel;
    s.add_prefix_space = flag(j, "add_prefix_space", true);
    s.use_regex = flag(j, "use_regex", true);
  } else if (type == "Split") {
    const json pattern = j.value("pattern", json());
    s.behavior = parse_behavior(j, source, "");
    s.invert = flag(j, "invert", false);
    const bool gpt2 = pattern.is_object() && pattern.value("Regex", std::string()) == kGpt2Pattern;
    if (gpt2 && s.behavior == SplitBehavior::kIsolated && !s.invert) {
      s.kind = K::kGpt2Split;
    } else {
      s.kind = K::kSplit;
      s.pattern = parse_pattern(pattern, source, type);
    }
  } else if (type == "Digits") {
    s.kind = K::kDigits;
    s.individual_digits = flag(j, "individual_digits", false);
  } else if (type == "Metaspace") {
    s.kind = K::kMetaspace;
    s.replacement = replacement_char(j, source);
    s.prepend_scheme = parse_prepend_scheme(j, source);
    s.split = flag(j, "split", true);
  } else if (type == "Whitespace") {
    s.kind = K::kWhitespace;
  } else if (type == "WhitespaceSplit") {
    s.kind = K::kWhitespaceSplit;
  } else if (type == "Punctuation") {
    s.kind = K::kPunctuation;
    s.behavior = parse_behavior(j, source, "Isolated");
  } else {
    fail(source, "pre-tokenizer type '" + type + "' is not supported");
  }
  out.push_back(std::move(s));
}

void add_decoder(const json& j, const std::string& source, std::vector<DecoderStep>& out) {
  const std::string type = type_of(j, source, "decoder");
  if (type == "Sequence") {
    for (const auto& sub : list(j, "decoders", source, type)) add_decoder(sub, source, out);
  } else if (type == "ByteLevel") {
    out.push_back(ByteLevelDecode{});
  } else if (type == "Metaspace") {
    out.push_back(MetaspaceDecode{replacement_char(j, source), parse_prepend_scheme(j, source)});
  } else if (type == "Replace") {
    out.push_back(ReplaceDecode{parse_pattern(j.value("pattern", json()), source, type),
                                str(j, "content", "")});
  } else if (type == "ByteFallback") {
    out.push_back(ByteFallbackDecode{});
  } else if (type == "Fuse") {
    out.push_back(FuseDecode{});
  } else if (type == "Strip") {
    const std::string c = str(j, "content", " ");
    if (c.empty() || utf8_next(c, 0).len != c.size())
      fail(source, "Strip decoder content '" + c + "' is not one character");
    out.push_back(
        StripDecode{c, j.value("start", std::size_t{0}), j.value("stop", std::size_t{0})});
  } else {
    fail(source, "decoder type '" + type + "' is not supported");
  }
}

// ["[CLS]", 101] as BertProcessing / RobertaProcessing write a token.
std::uint32_t pair_id(const json& j, const char* key, const std::string& source,
                      const std::string& type) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_unsigned()) {
    fail(source, type + " \"" + key + "\" is not [token, id]");
  }
  return json_token_id((*it)[1], source, type + " \"" + key + "\" id");
}

void add_post(const json& j, const std::string& source,
              const std::function<std::uint32_t(const std::string&)>& id_of,
              std::vector<Template>& out) {
  const std::string type = type_of(j, source, "post-processor");
  if (type == "Sequence") {
    for (const auto& sub : list(j, "processors", source, type)) add_post(sub, source, id_of, out);
  } else if (type == "ByteLevel") {
    // Offsets only.
  } else if (type == "TemplateProcessing") {
    const json specials = j.value("special_tokens", json::object());
    Template t;
    for (const auto& item : list(j, "single", source, type)) {
      if (item.contains("Sequence")) {
        t.push_back({true, {}});
      } else if (item.contains("SpecialToken") && item["SpecialToken"].contains("id")) {
        const std::string name = item["SpecialToken"]["id"].get<std::string>();
        TemplatePiece p;
        auto sp = specials.find(name);
        if (sp != specials.end() && sp->contains("ids") && (*sp)["ids"].is_array()) {
          for (const auto& id : (*sp)["ids"]) {
            p.ids.push_back(json_token_id(id, source, type + " special token '" + name + "' id"));
          }
        } else {
          p.ids.push_back(id_of(name));
        }
        t.push_back(std::move(p));
      } else {
        fail(source, type + " item is neither Sequence nor SpecialToken: " + item.dump());
      }
    }
    out.push_back(std::move(t));
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    out.push_back({{false, {pair_id(j, "cls", source, type)}},
                   {true, {}},
                   {false, {pair_id(j, "sep", source, type)}}});
  } else {
    fail(source, "post-processor type '" + type + "' is not supported");
  }
}

}  // namespace

Normalizer parse_normalizer(const json& j, const std::string& source) {
  std::vector<NormalizerStep> steps;
  if (!j.is_null()) add_normalizer(j, source, steps);
  return Normalizer(std::move(steps));
}

std::vector<PreTokenizeStep> parse_pre_tokenizer(const json& j, const std::string& source) {
  std::vector<PreTokenizeStep> steps;
  if (!j.is_null()) add_pre_tokenizer(j, source, steps);
  return steps;
}

Decoder parse_decoder(const json& j, const std::string& source) {
  if (j.is_null()) return Decoder();
  std::vector<DecoderStep> steps;
  add_decoder(j, source, steps);
  return Decoder(std::move(steps));
}

std::vector<Template> parse_post_processor(
    const json& j, const std::string& source,
    const std::function<std::uint32_t(const std::string&)>& id_of) {
  std::vector<Template> out;
  if (!j.is_null()) add_post(j, source, id_of, out);
  return out;
}

}  // namespace forge::text
