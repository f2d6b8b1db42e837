// Decoders (tokenizer.json "decoder"): token strings back to text. Each step
// maps the list of token strings to a new list (Hugging Face's decode_chain);
// the text is their concatenation. Without a decoder, tokens are joined by " ".
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "text/pattern.h"
#include "text/pretokenizer.h"

namespace forge::text {

struct ByteLevelDecode {};  // byte-level alphabet back to bytes; all tokens into one
struct MetaspaceDecode {
  std::string replacement = "\xE2\x96\x81";
  PrependScheme prepend_scheme = PrependScheme::kAlways;  // not kNever: the first token drops it
};
struct ReplaceDecode {
  Pattern pattern;
  std::string content;
};
struct ByteFallbackDecode {};  // runs of <0xXX> tokens to their bytes (U+FFFD each if invalid)
struct FuseDecode {};          // all tokens into one
struct StripDecode {
  std::string content = " ";        // one character
  std::size_t start = 0, stop = 0;  // at most this many copies cut from each token's ends
};
using DecoderStep = std::variant<ByteLevelDecode, MetaspaceDecode, ReplaceDecode,
                                 ByteFallbackDecode, FuseDecode, StripDecode>;

class Decoder {
 public:
  Decoder() = default;
  explicit Decoder(std::vector<DecoderStep> steps) : steps_(std::move(steps)), present_(true) {}

  // Text of the token strings (valid UTF-8).
  std::string decode(std::vector<std::string> tokens) const;
  // What one token contributes in the middle of a text, as raw bytes (may be part
  // of a UTF-8 character): per-token steps only, no Fuse / Strip / first-token rules.
  // With `fallback`, whether ByteFallback read the token as one byte of a run
  // ("<0xXX>"): such a run decodes whole, one U+FFFD per byte when its bytes
  // are not valid UTF-8.
  std::string token_bytes(const std::string& token, bool* fallback = nullptr) const;

 private:
  std::vector<DecoderStep> steps_;
  bool present_ = false;  // false: join with spaces
};

}  // namespace forge::text
