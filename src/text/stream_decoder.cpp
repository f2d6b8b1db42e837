#include "forge/tokenizer.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace forge {

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool skip_special)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

std::string StreamDecoder::push(std::uint32_t id) {
  const std::string& b = tokenizer_.impl().bytes_of(id);
  if (skip_special_ && tokenizer_.impl().special[id]) return {};
  pending_ += b;
  const std::size_t complete = text::utf8_complete_prefix(pending_);
  std::string out = text::utf8_lossy(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = text::utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace forge
