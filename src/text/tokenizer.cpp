#include "forge/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "forge/error.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace forge {

namespace {

std::optional<std::uint32_t> first_known(const Tokenizer::Impl& t,
                                         std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto it = t.added_ids.find(name); it != t.added_ids.end()) return it->second;
    if (auto it = t.model.vocab().find(name); it != t.model.vocab().end()) return it->second;
  }
  return std::nullopt;
}

std::vector<text::AddedToken> with_normalized(std::vector<text::AddedToken> tokens, bool normalized,
                                              const text::Normalizer& n) {
  std::vector<text::AddedToken> out;
  for (auto& t : tokens) {
    if (t.normalized != normalized) continue;
    if (normalized) t.content = n.apply(t.content);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

Tokenizer::Impl::Impl(text::TokenizerSpec spec)
    : model(std::move(spec.bpe), spec.source),
      raw_matcher(with_normalized(spec.added, false, spec.normalizer)),
      norm_matcher(with_normalized(spec.added, true, spec.normalizer)),
      normalizer(std::move(spec.normalizer)),
      pre(std::move(spec.pre_steps), /*raw_byte_level=*/true),
      post(std::move(spec.post)),
      decoder(std::move(spec.decoder)),
      bos(spec.bos),
      eos(spec.eos) {
  std::uint32_t size = model.id_end();
  for (const auto& t : spec.added) size = std::max(size, t.id + 1);
  tokens.resize(size);
  bytes.resize(size);
  present.assign(size, false);
  special.assign(size, false);
  fallback_byte.assign(size, false);
  for (std::uint32_t id = 0; id < model.id_end(); ++id) {
    if (!model.has(id)) continue;
    tokens[id] = model.spelling(id);
    present[id] = true;
  }
  for (const auto& t : spec.added) {
    tokens[t.id] = t.content;
    present[t.id] = true;
    special[t.id] = t.special;
    added_ids.emplace(t.content, t.id);
  }
  for (std::uint32_t id = 0; id < size; ++id) {
    if (!present[id]) continue;
    bool fallback = false;
    bytes[id] = decoder.token_bytes(tokens[id], &fallback);
    fallback_byte[id] = fallback;
  }
  if (!eos) eos = first_known(*this, {"<|endoftext|>", "</s>", "<|end_of_text|>"});
  if (!bos) bos = first_known(*this, {"<s>", "<|begin_of_text|>"});
  if (bos && *bos >= size) {
    throw IoError("[tokenizer] " + spec.source + ": bos id " + std::to_string(*bos) +
                  " is out of range for vocab size " + std::to_string(size));
  }
  if (eos && *eos >= size) {
    throw IoError("[tokenizer] " + spec.source + ": eos id " + std::to_string(*eos) +
                  " is out of range for vocab size " + std::to_string(size));
  }
  for (const auto& t : post) {
    for (const auto& p : t) {
      for (std::uint32_t id : p.ids) {
        if (id >= size) {
          throw IoError("[tokenizer] " + spec.source + ": post-processor id " + std::to_string(id) +
                        " is out of range for vocab size " + std::to_string(size));
        }
        if (!present[id]) {  // encode would add an id that decode refuses
          throw IoError("[tokenizer] " + spec.source + ": post-processor id " + std::to_string(id) +
                        " has no token in the vocab");
        }
      }
    }
  }
}

std::vector<std::uint32_t> Tokenizer::Impl::encode(std::string_view text, bool match_added,
                                                   bool add_special) const {
  if (const std::size_t bad = text::utf8_first_invalid(text); bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw ValueError("[tokenizer] encode: text is not valid UTF-8 at byte offset " +
                     std::to_string(bad) + " (byte " + hex + ")");
  }
  std::vector<std::uint32_t> out;
  out.reserve(text.size() / 3 + 1);
  const text::BpeModel::CacheLease lease(model);
  const bool raw_bytes = pre.emits_raw_bytes();
  const std::function<void(std::string_view)> emit = [&](std::string_view piece) {
    model.encode_piece(piece, raw_bytes, out, lease);
  };
  // Normalized text between added tokens, then the added tokens matched in it.
  auto normalized = [&](std::string_view seg, bool at_start) {
    if (normalizer.empty() && norm_matcher.empty()) {
      pre.split(seg, at_start, emit);
      return;
    }
    const std::string n = normalizer.apply(seg);
    const std::string_view nv(n);
    if (!match_added) {
      pre.split(nv, at_start, emit);
      return;
    }
    for (const auto& s : norm_matcher.split(nv)) {
      if (s.id) {
        out.push_back(*s.id);
      } else {
        pre.split(nv.substr(s.begin, s.end - s.begin), at_start && s.begin == 0, emit);
      }
    }
  };
  if (!match_added || raw_matcher.empty()) {
    normalized(text, true);
  } else {
    for (const auto& s : raw_matcher.split(text)) {
      if (s.id) {
        out.push_back(*s.id);
      } else {
        normalized(text.substr(s.begin, s.end - s.begin), s.begin == 0);
      }
    }
  }
  return add_special && !post.empty() ? text::apply_templates(post, std::move(out)) : out;
}

std::string Tokenizer::Impl::decode(std::span<const std::uint32_t> ids, bool skip_special) const {
  std::vector<std::string> strs;
  strs.reserve(ids.size());
  for (std::uint32_t id : ids) {
    check(id);
    if (!(skip_special && special[id])) strs.push_back(tokens[id]);
  }
  return decoder.decode(std::move(strs));
}

void Tokenizer::Impl::check(std::uint32_t id) const {
  if (id >= bytes.size()) {
    throw ValueError("[tokenizer] token id " + std::to_string(id) +
                     " is out of range for vocab size " + std::to_string(bytes.size()));
  }
  if (!present[id]) {
    throw ValueError("[tokenizer] token id " + std::to_string(id) + " has no token (vocab size " +
                     std::to_string(bytes.size()) + ")");
  }
}

const std::string& Tokenizer::Impl::bytes_of(std::uint32_t id) const {
  check(id);
  return bytes[id];
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  return Tokenizer(std::make_shared<const Impl>(text::load_tokenizer_json(tokenizer_json)));
}

Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  text::TokenizerSpec spec;
  if (fs::exists(dir / "tokenizer.json")) {
    spec = text::load_tokenizer_json(dir / "tokenizer.json");
  } else if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt")) {
    spec = text::load_vocab_merges(dir / "vocab.json", dir / "merges.txt");
  } else if (fs::exists(dir / "encoder.json") && fs::exists(dir / "vocab.bpe")) {
    spec = text::load_vocab_merges(dir / "encoder.json", dir / "vocab.bpe");
  } else {
    throw IoError("[tokenizer] '" + dir.string() +
                  "' has no tokenizer.json, vocab.json + merges.txt or encoder.json + vocab.bpe");
  }
  text::apply_model_metadata(spec, dir);
  return Tokenizer(std::make_shared<const Impl>(std::move(spec)));
}

Tokenizer Tokenizer::from_path(const std::filesystem::path& file_or_dir) {
  return std::filesystem::is_directory(file_or_dir) ? from_dir(file_or_dir)
                                                    : from_file(file_or_dir);
}

std::vector<std::uint32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, true, add_special_tokens);
}

std::vector<std::uint32_t> Tokenizer::encode_ordinary(std::string_view text) const {
  return impl_->encode(text, false, false);
}

std::string Tokenizer::decode(std::span<const std::uint32_t> ids, bool skip_special) const {
  return impl_->decode(ids, skip_special);
}

const std::string& Tokenizer::token_bytes(std::uint32_t id) const { return impl_->bytes_of(id); }

std::size_t Tokenizer::vocab_size() const { return impl_->bytes.size(); }

std::optional<std::uint32_t> Tokenizer::token_id(std::string_view token) const {
  if (auto it = impl_->added_ids.find(token); it != impl_->added_ids.end()) return it->second;
  if (auto it = impl_->model.vocab().find(token); it != impl_->model.vocab().end()) {
    return it->second;
  }
  return std::nullopt;
}

bool Tokenizer::is_special(std::uint32_t id) const {
  return id < impl_->special.size() && impl_->special[id];
}

std::optional<std::uint32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<std::uint32_t> Tokenizer::eos_id() const { return impl_->eos; }

}  // namespace forge
