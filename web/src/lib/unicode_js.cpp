// text/unicode.h on the page's JavaScript (String.normalize, toLowerCase and
// Unicode property escapes), in place of ICU in the browser build. ASCII is
// answered here; other characters ask the engine.
#include <emscripten/val.h>

#include "text/unicode.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

using emscripten::val;

// Whether `cp` has property `which` (0 White_Space, 1 P, 2 \w, 3 N), by the
// engine's Unicode property escapes. The patterns are built from C++ strings:
// inside EM_JS's text a "\\p" reaches JavaScript as "p", so a literal there
// would lose its backslash.
bool forge_unicode_test(int which, unsigned cp) {
  static const char* const patterns[] = {"^\\p{White_Space}$", "^\\p{P}$",
                                         "^[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]$", "^\\p{N}$"};
  static val regexes = [] {
    val list = val::array();
    for (const char* p : patterns) list.call<void>("push", val::global("RegExp").new_(std::string(p), std::string("u")));
    return list;
  }();
  const val ch = val::global("String").call<val>("fromCodePoint", cp);
  return regexes[which].call<bool>("test", ch);
}

}  // namespace

std::string normalize(std::string_view text, NormalForm form) {
  static const char* names[] = {"NFC", "NFD", "NFKC", "NFKD"};
  bool ascii = true;
  for (char c : text) ascii = ascii && (unsigned char)c < 0x80;
  if (ascii) return std::string(text);
  return val(std::string(text)).call<std::string>("normalize", std::string(names[int(form)]));
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Step step = utf8_next(text, i);
    const std::string_view ch = text.substr(i, step.len);
    if (step.cp < 0x80) {
      const char c = text[i];
      out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    } else {
      // One character at a time, so no neighbour changes the mapping (Rust's char::to_lowercase).
      out += val(std::string(ch)).call<std::string>("toLowerCase");
    }
    i += step.len;
  }
  return out;
}

bool is_whitespace(std::uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return forge_unicode_test(0, cp);
}

bool is_punctuation(std::uint32_t cp) {
  if (cp < 0x80)
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  return forge_unicode_test(1, cp);
}

bool is_word_char(std::uint32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') || cp == '_';
  return forge_unicode_test(2, cp);
}

bool is_numeric(std::uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return forge_unicode_test(3, cp);
}

}  // namespace forge::text
