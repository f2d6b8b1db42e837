// text/unicode.h on the page's JavaScript (String.normalize, toLowerCase and
// Unicode property escapes), in place of ICU in the browser build. ASCII is
// answered here; other characters ask the engine.
#include <emscripten.h>
#include <emscripten/val.h>

#include "text/unicode.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

using emscripten::val;

EM_JS(int, forge_unicode_test, (int which, unsigned cp), {
  if (!Module.forgeUnicode) {
    Module.forgeUnicode = [new RegExp("^\\p{White_Space}$", "u"), new RegExp("^\\p{P}$", "u"),
                          new RegExp("^[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]$", "u"),
                          new RegExp("^\\p{N}$", "u")];
  }
  return Module.forgeUnicode[which].test(String.fromCodePoint(cp)) ? 1 : 0;
});

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
