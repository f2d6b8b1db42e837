// ICU behind text/unicode.h. ICU rather than utf8proc: it has every
// normalization form and the character properties used here in one
// well-kept Debian library (libicu-dev) that tracks the current Unicode version.
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include "forge/error.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

const icu::Normalizer2& normalizer(NormalForm form) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      n = icu::Normalizer2::getNFCInstance(err);
      break;
    case NormalForm::kNfd:
      n = icu::Normalizer2::getNFDInstance(err);
      break;
    case NormalForm::kNfkc:
      n = icu::Normalizer2::getNFKCInstance(err);
      break;
    case NormalForm::kNfkd:
      n = icu::Normalizer2::getNFKDInstance(err);
      break;
  }
  if (U_FAILURE(err) || !n) {
    throw Error(std::string("[unicode] ICU normalizer unavailable: ") + u_errorName(err));
  }
  return *n;
}

}  // namespace

std::string normalize(std::string_view text, NormalForm form) {
  const icu::Normalizer2& n = normalizer(form);
  const auto src = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), text.size()));
  UErrorCode err = U_ZERO_ERROR;
  if (n.isNormalized(src, err) && U_SUCCESS(err)) return std::string(text);
  err = U_ZERO_ERROR;
  const icu::UnicodeString dst = n.normalize(src, err);
  if (U_FAILURE(err))
    throw Error(std::string("[unicode] normalization failed: ") + u_errorName(err));
  std::string out;
  dst.toUTF8String(out);
  return out;
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Step step = utf8_next(text, i);
    if (step.cp < 0x80) {
      const char c = text[i];
      out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    } else {
      // One character at a time, so no neighbour changes the mapping.
      UChar src[2];
      int32_t n = 0;
      U16_APPEND_UNSAFE(src, n, step.cp);
      UChar dst[8];
      UErrorCode err = U_ZERO_ERROR;
      const int32_t len = u_strToLower(dst, 8, src, n, "", &err);
      if (U_FAILURE(err))
        throw Error(std::string("[unicode] lowercase failed: ") + u_errorName(err));
      for (int32_t k = 0; k < len;) {
        UChar32 c;
        U16_NEXT(dst, k, len, c);
        utf8_append(out, static_cast<std::uint32_t>(c));
      }
    }
    i += step.len;
  }
  return out;
}

bool is_whitespace(std::uint32_t cp) { return u_hasBinaryProperty(cp, UCHAR_WHITE_SPACE); }

bool is_punctuation(std::uint32_t cp) {
  if (cp < 0x80)
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  return u_ispunct(cp);
}

bool is_word_char(std::uint32_t cp) {
  return u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) || (U_GET_GC_MASK(cp) & U_GC_M_MASK) ||
         u_charType(cp) == U_DECIMAL_DIGIT_NUMBER || u_charType(cp) == U_CONNECTOR_PUNCTUATION ||
         u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL);
}

bool is_numeric(std::uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return (U_GET_GC_MASK(cp) & U_GC_N_MASK) != 0;
}

}  // namespace forge::text
