#include "forge/tokenizer.h"

#include <algorithm>

#include "forge/error.h"
#include "text/byte_level.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace forge {

namespace {

// The ByteLevel decoder's rule: a token spelled in the byte alphabet decodes
// to those bytes, any other token to its own UTF-8 text.
std::string decoded_bytes(const std::string& spelling) {
  auto raw = text::byte_level_to_bytes(spelling);
  return raw ? std::move(*raw) : spelling;
}

std::optional<std::uint32_t> first_known(const Tokenizer::Impl& t,
                                         std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto it = t.added_ids.find(name); it != t.added_ids.end()) return it->second;
    if (auto it = t.model.vocab().find(name); it != t.model.vocab().end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

Tokenizer::Impl::Impl(text::TokenizerSpec spec)
    : model(std::move(spec.bpe), spec.source),
      matcher(spec.added),
      pre(std::move(spec.pre_steps)),
      bos(spec.bos),
      eos(spec.eos) {
  std::uint32_t size = model.id_end();
  for (const auto& t : spec.added) size = std::max(size, t.id + 1);
  bytes.resize(size);
  present.assign(size, false);
  special.assign(size, false);
  for (std::uint32_t id = 0; id < model.id_end(); ++id) {
    if (!model.has(id)) continue;
    bytes[id] = decoded_bytes(model.spelling(id));
    present[id] = true;
  }
  for (const auto& t : spec.added) {
    bytes[t.id] = decoded_bytes(t.content);
    present[t.id] = true;
    special[t.id] = t.special;
    added_ids.emplace(t.content, t.id);
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
}

void Tokenizer::Impl::encode(std::string_view text, bool match_added,
                             std::vector<std::uint32_t>& out) const {
  const text::BpeModel::CacheLease lease(model);
  const std::function<void(std::string_view)> emit = [&](std::string_view piece) {
    model.encode_piece(piece, out, lease);
  };
  std::size_t pos = 0;
  while (match_added) {
    const auto m = matcher.find(text, pos);
    if (!m) break;
    pre.split(text.substr(pos, m->begin - pos), emit);
    out.push_back(m->id);
    pos = m->end;
  }
  pre.split(text.substr(pos), emit);
}

const std::string& Tokenizer::Impl::bytes_of(std::uint32_t id) const {
  if (id >= bytes.size()) {
    throw ValueError("[tokenizer] token id " + std::to_string(id) +
                     " is out of range for vocab size " + std::to_string(bytes.size()));
  }
  if (!present[id]) {
    throw ValueError("[tokenizer] token id " + std::to_string(id) + " has no token (vocab size " +
                     std::to_string(bytes.size()) + ")");
  }
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
  return std::filesystem::is_directory(file_or_dir) ? from_dir(file_or_dir) : from_file(file_or_dir);
}

std::vector<std::uint32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<std::uint32_t> out;
  out.reserve(text.size() / 3 + 1);
  impl_->encode(text, true, out);
  return out;
}

std::vector<std::uint32_t> Tokenizer::encode_ordinary(std::string_view text) const {
  std::vector<std::uint32_t> out;
  out.reserve(text.size() / 3 + 1);
  impl_->encode(text, false, out);
  return out;
}

std::string Tokenizer::decode(std::span<const std::uint32_t> ids, bool skip_special) const {
  std::string raw;
  for (std::uint32_t id : ids) {
    const std::string& b = impl_->bytes_of(id);
    if (!(skip_special && impl_->special[id])) raw += b;
  }
  return text::utf8_lossy(raw);
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
