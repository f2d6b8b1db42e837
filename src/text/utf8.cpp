#include "text/utf8.h"

namespace forge::text {

namespace {

// Expected length of a sequence from its lead byte; 0 for bytes that cannot lead.
int sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Valid range of the second byte after lead byte `b` (excludes overlongs,
// surrogates and code points above U+10FFFF).
bool valid_second(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

// Number of bytes of a valid sequence prefix at s[i] (up to the full length).
int valid_prefix(std::string_view s, std::size_t i, int need) {
  const auto lead = static_cast<unsigned char>(s[i]);
  int k = 1;
  while (k < need && i + k < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    const bool ok = k == 1 ? valid_second(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++k;
  }
  return k;
}

}  // namespace

Utf8Step utf8_next(std::string_view s, std::size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  if (lead < 0x80) return {lead, 1};
  const int need = sequence_length(lead);
  if (need == 0) return {kInvalidCodePoint, 1};
  const int have = valid_prefix(s, i, need);
  if (have < need) return {kInvalidCodePoint, static_cast<std::size_t>(have)};
  std::uint32_t cp = lead & (0x7F >> need);
  for (int k = 1; k < need; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return {cp, static_cast<std::size_t>(need)};
}

void utf8_append(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const Utf8Step step = utf8_next(bytes, i);
    if (step.cp == kInvalidCodePoint) {
      utf8_append(out, 0xFFFD);
    } else {
      out.append(bytes.substr(i, step.len));
    }
    i += step.len;
  }
  return out;
}

std::size_t utf8_complete_prefix(std::string_view bytes) {
  // A sequence that can still be completed starts within the last 3 bytes.
  const std::size_t n = bytes.size();
  const std::size_t from = n > 3 ? n - 3 : 0;
  for (std::size_t i = from; i < n; ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b >= 0x80 && b <= 0xBF) continue;  // continuation byte
    const int need = sequence_length(b);
    if (need <= 1) continue;
    const std::size_t have = n - i;
    if (have < static_cast<std::size_t>(need) &&
        valid_prefix(bytes, i, need) == static_cast<int>(have)) {
      return i;
    }
  }
  return n;
}

std::size_t utf8_first_invalid(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step step = utf8_next(s, i);
    if (step.cp == kInvalidCodePoint) return i;
    i += step.len;
  }
  return std::string_view::npos;
}

}  // namespace forge::text
