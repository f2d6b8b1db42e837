#include <algorithm>

#include "forge/error.h"
#include "forge/tokenizer.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace forge {

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool skip_special)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

std::string StreamDecoder::push(std::uint32_t id) {
  const auto& impl = tokenizer_.impl();
  const std::string& b = impl.bytes_of(id);
  if (skip_special_ && impl.special[id]) return {};
  ids_.push_back(id);
  pending_bytes_ += b;
  // A character still missing bytes: wait (a byte that can never be valid does not wait).
  if (text::utf8_complete_prefix(pending_bytes_) < pending_bytes_.size()) return {};
  std::string text = impl.decode(ids_, skip_special_);
  if (text.size() <= prefix_.size()) return {};
  if (text.compare(0, prefix_.size(), prefix_) != 0) {
    throw Error("[tokenizer] stream decode: the decoder changed text already emitted");
  }
  std::string out = text.substr(prefix_.size());
  // Keep the shortest tail that decodes on its own (a whole character, not the
  // last byte token of one) as context for the next push.
  std::size_t keep = 0;
  std::string tail;
  for (std::size_t k = 1; k <= std::min<std::size_t>(4, ids_.size()); ++k) {
    tail.insert(0, impl.bytes_of(ids_[ids_.size() - k]));
    if (text::utf8_first_invalid(tail) == std::string::npos) {
      keep = k;
      break;
    }
  }
  ids_.erase(ids_.begin(), ids_.end() - static_cast<std::ptrdiff_t>(keep));
  context_ = keep;
  prefix_ = impl.decode(ids_, skip_special_);
  pending_bytes_.clear();
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  if (ids_.size() > context_) {
    const std::string text = tokenizer_.impl().decode(ids_, skip_special_);
    if (text.size() > prefix_.size() && text.compare(0, prefix_.size(), prefix_) == 0) {
      out = text.substr(prefix_.size());
    }
  }
  ids_.clear();
  context_ = 0;
  prefix_.clear();
  pending_bytes_.clear();
  return out;
}

}  // namespace forge
