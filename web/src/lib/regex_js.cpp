// text::Regex on the page's RegExp (Unicode mode: \p{..}, lookahead, inline
// (?i:..) groups), in place of Oniguruma in the browser build. The tokenizer
// works on UTF-8 bytes and RegExp on UTF-16 units: a find converts the text
// once (the last text is kept, as find_all searches one text many times) and
// maps match positions back to byte offsets.
#include <emscripten.h>
#include <emscripten/val.h>

#include <string>

#include "forge/error.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

using emscripten::val;

// new RegExp(pattern, "gu"), or the engine's complaint as a string.
EM_JS(emscripten::EM_VAL, forge_regexp_new, (const char* pattern), {
  try {
    return Emval.toHandle(new RegExp(UTF8ToString(pattern), "gu"));
  } catch (e) {
    return Emval.toHandle(String(e.message || e));
  }
});

class JsRegex final : public Regex {
 public:
  explicit JsRegex(std::string_view pattern) {
    re_ = val::take_ownership(forge_regexp_new(std::string(pattern).c_str()));
    if (re_.isString())
      throw ValueError("[regex] cannot compile '" + std::string(pattern) + "': " + re_.as<std::string>());
  }

  std::optional<Span> find(std::string_view text, std::size_t from) const override {
    if (!cached_ || text != text_) cache(text);
    re_.set("lastIndex", byte_to_u16_[from]);
    const val m = re_.call<val>("exec", js_);
    if (m.isNull()) return std::nullopt;
    const unsigned at = m["index"].as<unsigned>(), len = m[0]["length"].as<unsigned>();
    return Span{u16_to_byte_[at], u16_to_byte_[at + len]};
  }

 private:
  // The text as a JS string, and both ways between UTF-16 units and bytes
  // (byte_to_u16_ is meaningful at character boundaries only).
  void cache(std::string_view text) const {
    text_.assign(text);
    js_ = val(text_);
    u16_to_byte_.clear();
    byte_to_u16_.assign(text.size() + 1, 0);
    for (std::size_t i = 0; i < text.size();) {
      const Utf8Step s = utf8_next(text, i);
      byte_to_u16_[i] = unsigned(u16_to_byte_.size());
      u16_to_byte_.push_back(i);
      if (s.cp >= 0x10000) u16_to_byte_.push_back(i);  // a surrogate pair
      i += s.len;
    }
    byte_to_u16_[text.size()] = unsigned(u16_to_byte_.size());
    u16_to_byte_.push_back(text.size());
    cached_ = true;
  }

  mutable val re_ = val::undefined();  // exec() moves its lastIndex
  mutable bool cached_ = false;
  mutable std::string text_;
  mutable val js_ = val::undefined();
  mutable std::vector<std::size_t> u16_to_byte_;
  mutable std::vector<unsigned> byte_to_u16_;
};

}  // namespace

std::unique_ptr<Regex> compile_regex(std::string_view pattern) { return std::make_unique<JsRegex>(pattern); }

}  // namespace forge::text
