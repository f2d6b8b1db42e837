#include <algorithm>

#include "forge/tokenizer.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace forge {

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool skip_special)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

// How many of the last ids_ the next push decodes again, as context. ByteFallback
// decodes a run of byte tokens whole, and a run that is not valid UTF-8 is one
// U+FFFD per byte, later bytes included: while the trailing run is invalid, keep
// its shortest tail that is invalid on its own (no later byte makes it valid: the
// run does not end inside a character here). Otherwise the shortest tail that
// decodes on its own (a whole character, not the last byte token of one).
std::size_t StreamDecoder::context_to_keep() const {
  const auto& impl = tokenizer_.impl();
  const std::size_t n = ids_.size();
  std::size_t run = 0;
  while (run < n && impl.fallback_byte[ids_[n - 1 - run]]) ++run;
  // The run's shortest invalid tail, kept when the whole run (its part in ids_)
  // is invalid: so is the run before ids_ then, since context kept from a
  // valid run starts on a character boundary.
  std::string tail;
  std::size_t shortest_invalid = 0;
  for (std::size_t k = 1; k <= run; ++k) {
    tail.insert(0, impl.bytes_of(ids_[n - k]));
    const bool invalid = text::utf8_first_invalid(tail) != std::string::npos;
    if (invalid && shortest_invalid == 0) shortest_invalid = k;
    if (k == run && invalid) return shortest_invalid;
  }
  tail.clear();
  for (std::size_t k = 1; k <= std::min<std::size_t>(4, n); ++k) {
    tail.insert(0, impl.bytes_of(ids_[n - k]));
    if (text::utf8_first_invalid(tail) == std::string::npos) return k;
  }
  return 0;
}

// The decode of the window, which starts with prefix_ unless the decoder
// rewrote text already emitted: a ByteFallback run of whole characters that a
// later byte made invalid (the full decode turns the whole run into U+FFFD).
// Then what was emitted stays, and the window restarts at the unemitted ids.
std::string StreamDecoder::window_text() {
  const auto& impl = tokenizer_.impl();
  std::string text = impl.decode(ids_, skip_special_);
  if (text.size() >= prefix_.size() && text.compare(0, prefix_.size(), prefix_) == 0) return text;
  exact_ = false;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(context_));
  context_ = 0;
  prefix_.clear();
  return impl.decode(ids_, skip_special_);
}

std::string StreamDecoder::push(std::uint32_t id) {
  const auto& impl = tokenizer_.impl();
  const std::string& b = impl.bytes_of(id);
  if (skip_special_ && impl.special[id]) return {};
  ids_.push_back(id);
  pending_bytes_ += b;
  // A character still missing bytes: wait (a byte that can never be valid does not wait).
  if (text::utf8_complete_prefix(pending_bytes_) < pending_bytes_.size()) return {};
  std::string text = window_text();
  if (text.size() <= prefix_.size()) return {};
  std::string out = text.substr(prefix_.size());
  ids_.erase(ids_.begin(), ids_.end() - static_cast<std::ptrdiff_t>(context_to_keep()));
  context_ = ids_.size();
  prefix_ = impl.decode(ids_, skip_special_);
  pending_bytes_.clear();
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  if (ids_.size() > context_) {
    const std::string text = window_text();
    if (text.size() > prefix_.size()) out = text.substr(prefix_.size());
  }
  ids_.clear();
  context_ = 0;
  prefix_.clear();
  pending_bytes_.clear();
  return out;
}

}  // namespace forge
