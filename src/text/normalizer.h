// Normalizers (tokenizer.json "normalizer"): text rewrites applied before
// pre-tokenization, in order. Supported: NFC, NFD, NFKC, NFKD, Lowercase,
// Prepend, Replace, Strip and Sequence (flattened into the list of steps).
#pragma once
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "text/pattern.h"
#include "text/unicode.h"

namespace forge::text {

struct NormalizeForm {
  NormalForm form;
};
struct Lowercase {};
struct Prepend {
  std::string prefix;  // added in front of non-empty text
};
struct Replace {
  Pattern pattern;
  std::string content;
};
struct Strip {
  bool left = true, right = true;  // whitespace on either end
};
using NormalizerStep = std::variant<NormalizeForm, Lowercase, Prepend, Replace, Strip>;

class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}
  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view text) const;

 private:
  std::vector<NormalizerStep> steps_;
};

}  // namespace forge::text
