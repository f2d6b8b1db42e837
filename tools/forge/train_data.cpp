// Token files, tokenizing the training text, the validation split and window
// sampling for `forge train`.
#include "train_data.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "models/gpt2/train_util.h"

namespace forge::cli {

namespace {
constexpr char kMagic[8] = {'F', 'G', 'T', 'O', 'K', '0', '0', '1'};
}

std::vector<uint32_t> TrainTokenizer::encode(const std::string& text) const {
  if (bpe) return bpe->encode_ordinary(text);
  return std::vector<uint32_t>(reinterpret_cast<const unsigned char*>(text.data()),
                               reinterpret_cast<const unsigned char*>(text.data()) + text.size());
}

std::string TrainTokenizer::decode(const std::vector<uint32_t>& ids) const {
  if (bpe) return bpe->decode(ids, true);
  std::string s;
  for (uint32_t id : ids) s.push_back(id < 256 ? char(id) : '?');
  return s;
}

void write_token_file(const std::filesystem::path& path, const std::vector<uint32_t>& ids) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    const uint64_t n = ids.size();
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&n), 8);
    f.write(reinterpret_cast<const char*>(ids.data()), std::streamsize(n * 4));
    f.close();  // a full disk shows when the buffer is flushed
    if (!f) throw IoError("[train] cannot write token file '" + tmp.string() + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError("[train] cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
}

std::vector<uint32_t> read_token_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("[train] cannot open token file '" + path.string() + "'");
  char magic[8];
  uint64_t n = 0;
  f.read(magic, 8);
  f.read(reinterpret_cast<char*>(&n), 8);
  if (!f || std::memcmp(magic, kMagic, 8) != 0)
    throw IoError("[train] '" + path.string() + "' is not a forge token file");
  const uint64_t size = std::filesystem::file_size(path);
  // Compared without computing 16 + n * 4, which wraps for a corrupt count.
  if (size < 16 || (size - 16) % 4 != 0 || n != (size - 16) / 4)
    throw IoError("[train] token file '" + path.string() + "' holds " + std::to_string(size) + " bytes, not the 16 + 4 * " +
                  std::to_string(n) + " its header announces");
  std::vector<uint32_t> ids(n);
  f.read(reinterpret_cast<char*>(ids.data()), std::streamsize(n * 4));
  if (!f) throw IoError("[train] cannot read token file '" + path.string() + "'");
  return ids;
}

namespace {

// One document a line: {"text": ...} or {"messages": [...]}.
void tokenize_jsonl(const std::string& file, const std::string& content, const TrainTokenizer& tok,
                    const ChatEncoder& chat, std::vector<uint32_t>& out) {
  std::istringstream in(content);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string at = "[train] " + file + ":" + std::to_string(n) + ": ";
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, false);
    if (j.is_discarded()) throw ValueError(at + "not a JSON object");
    std::vector<uint32_t> ids;
    if (j.is_object() && j.contains("text")) {
      if (!j["text"].is_string()) throw ValueError(at + "\"text\" must be a string");
      ids = tok.encode(j["text"].get<std::string>());
    } else if (j.is_object() && j.contains("messages")) {
      const auto& m = j["messages"];
      if (!m.is_array() || m.empty()) throw ValueError(at + "\"messages\" must be a non-empty list of {role, content}");
      for (const auto& msg : m)
        if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string())
          throw ValueError(at + "every message needs a \"role\" string");
      if (!chat) throw ValueError(at + "a conversation needs a model with a chat template and its tokenizer");
      try {
        ids = chat(m);
      } catch (const Error& e) {
        // Its own "[who] " goes: `at` says where.
        std::string what = e.what();
        if (what.rfind('[', 0) == 0 && what.find("] ") != std::string::npos) what = what.substr(what.find("] ") + 2);
        throw ValueError(at + what);
      }
    } else {
      throw ValueError(at + "a line must be an object with \"text\" or \"messages\"");
    }
    out.insert(out.end(), ids.begin(), ids.end());
    if (auto eos = tok.eos()) out.push_back(*eos | (j.contains("messages") ? kNoLoss : 0u));
  }
}

}  // namespace

std::vector<uint32_t> tokenize_files(const std::vector<std::string>& files, const TrainTokenizer& tok,
                                     const ChatEncoder& chat) {
  std::vector<uint32_t> out;
  for (const std::string& file : files) {
    if (!std::filesystem::is_regular_file(file)) throw IoError("[train] data file '" + file + "' does not exist");
    std::ifstream f(file, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f) throw IoError("[train] cannot read data file '" + file + "'");
    if (std::filesystem::path(file).extension() == ".jsonl") {
      tokenize_jsonl(file, ss.str(), tok, chat, out);
      continue;
    }
    std::vector<uint32_t> ids = tok.encode(ss.str());
    out.insert(out.end(), ids.begin(), ids.end());
    if (auto eos = tok.eos()) out.push_back(*eos);
  }
  return out;
}

TrainSplit split_tokens(const std::vector<uint32_t>& ids, double val_fraction, int64_t T) {
  const int64_t n = int64_t(ids.size());
  int64_t val = std::max<int64_t>(int64_t(double(n) * val_fraction), T + 1);
  if (n - val < T + 1 || val_fraction <= 0)
    throw ValueError("[train] " + std::to_string(n) + " tokens are too few for a training and a validation part of " +
                     std::to_string(T + 1) + " tokens each (sequence length " + std::to_string(T) +
                     "); use more text or a smaller --seq");
  TrainSplit s;
  s.train.assign(ids.begin(), ids.end() - val);
  s.val.assign(ids.end() - val, ids.end());
  return s;
}

Gpt2MicroBatch sample_windows(const std::vector<uint32_t>& tokens, int64_t rows, int64_t T, uint64_t seed,
                              uint64_t stream, int64_t step, int64_t first_row) {
  const uint64_t starts = uint64_t(tokens.size()) - uint64_t(T);  // windows of T + 1 tokens
  std::vector<uint32_t> in(size_t(rows * T));
  std::vector<int32_t> tgt(size_t(rows * T));
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t s = gpt2::derive_key(seed, stream, uint64_t(step), uint64_t(first_row + r)) % starts;
    for (int64_t t = 0; t < T; ++t) {
      in[size_t(r * T + t)] = tokens[size_t(s) + size_t(t)] & ~kNoLoss;
      const uint32_t next = tokens[size_t(s) + size_t(t) + 1];
      tgt[size_t(r * T + t)] = next & kNoLoss ? -1 : int32_t(next);
    }
  }
  return {Tensor::from_vector(in, {rows, T}), std::move(tgt)};
}

}  // namespace forge::cli
