// tokenizer.json of the byte tokenizer (see byte_tokenizer.h).
#include "byte_tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/error.h"

#include "text/byte_level.h"

namespace forge::cli {

std::string byte_tokenizer_json() {
  using nlohmann::ordered_json;
  ordered_json vocab = ordered_json::object();
  for (int b = 0; b < 256; ++b) vocab[text::bytes_to_byte_level(std::string(1, char(b)))] = b;
  const ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  const ordered_json tok = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       {{{"id", 256}, {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
         {"normalized", false}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
        {"merges", ordered_json::array()}}},
  };
  return tok.dump(1) + "\n";
}

void set_special_token_ids(const std::filesystem::path& model_dir, uint32_t id) {
  for (const char* name : {"config.json", "generation_config.json"}) {
    const std::filesystem::path p = model_dir / name;
    std::ifstream in(p);
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw IoError("[train] cannot read '" + p.string() + "'");
    in.close();
    j["bos_token_id"] = id;
    j["eos_token_id"] = id;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << j.dump(2) << "\n";
    out.close();
    if (!out) throw IoError("[train] cannot write '" + p.string() + "'");
  }
}

}  // namespace forge::cli
