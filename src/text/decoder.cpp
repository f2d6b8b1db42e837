#include "text/decoder.h"

#include <charconv>

#include "text/byte_level.h"
#include "text/overloaded.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

// The byte a "<0xXX>" token stands for, or -1.
int fallback_byte(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  const auto r = std::from_chars(t.data() + 3, t.data() + 5, v, 16);
  return r.ec == std::errc() && r.ptr == t.data() + 5 ? v : -1;
}

std::string byte_level_bytes(const std::string& t) {
  auto raw = byte_level_to_bytes(t);
  return raw ? std::move(*raw) : t;
}

std::string metaspace(const std::string& t, const MetaspaceDecode& m, bool first) {
  const bool drop = first && m.prepend_scheme != PrependScheme::kNever;
  std::string out;
  for (std::size_t pos = 0;;) {
    const std::size_t at = t.find(m.replacement, pos);
    out.append(t, pos, at == std::string::npos ? std::string::npos : at - pos);
    if (at == std::string::npos) break;
    if (!drop) out.push_back(' ');
    pos = at + m.replacement.size();
  }
  return out;
}

std::string strip(const std::string& t, const StripDecode& s) {
  const std::size_t w = s.content.size();
  std::size_t begin = 0, end = t.size();
  for (std::size_t i = 0; i < s.start && begin + w <= end && t.compare(begin, w, s.content) == 0;
       ++i) {
    begin += w;
  }
  for (std::size_t i = 0; i < s.stop && end >= begin + w && t.compare(end - w, w, s.content) == 0;
       ++i) {
    end -= w;
  }
  return t.substr(begin, end - begin);
}

void byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  auto flush = [&] {
    if (bytes.empty()) return;
    if (utf8_lossy(bytes) == bytes) {
      out.push_back(bytes);
    } else {
      for (std::size_t i = 0; i < bytes.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    bytes.clear();
  };
  for (auto& t : tokens) {
    const int b = fallback_byte(t);
    if (b >= 0) {
      bytes.push_back(static_cast<char>(b));
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens = std::move(out);
}

std::string join(const std::vector<std::string>& tokens, const char* sep = "") {
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += sep;
    out += tokens[i];
  }
  return out;
}

}  // namespace

std::string Decoder::decode(std::vector<std::string> tokens) const {
  if (!present_) return utf8_lossy(join(tokens, " "));
  for (const DecoderStep& step : steps_) {
    std::visit(Overloaded{
                   [&](const ByteLevelDecode&) {
                     std::string raw;
                     for (const auto& t : tokens) raw += byte_level_bytes(t);
                     tokens.assign(1, utf8_lossy(raw));
                   },
                   [&](const MetaspaceDecode& m) {
                     for (std::size_t i = 0; i < tokens.size(); ++i)
                       tokens[i] = metaspace(tokens[i], m, i == 0);
                   },
                   [&](const ReplaceDecode& r) {
                     for (auto& t : tokens) t = r.pattern.replace_all(t, r.content);
                   },
                   [&](const ByteFallbackDecode&) { byte_fallback(tokens); },
                   [&](const FuseDecode&) { tokens.assign(1, join(tokens)); },
                   [&](const StripDecode& s) {
                     for (auto& t : tokens) t = strip(t, s);
                   },
               },
               step);
  }
  return utf8_lossy(join(tokens));
}

std::string Decoder::token_bytes(const std::string& token, bool* fallback) const {
  std::string t = token;
  if (fallback) *fallback = false;
  if (!present_) return t;
  for (const DecoderStep& step : steps_) {
    std::visit(Overloaded{
                   [&](const ByteLevelDecode&) { t = byte_level_bytes(t); },
                   [&](const MetaspaceDecode& m) { t = metaspace(t, m, false); },
                   [&](const ReplaceDecode& r) { t = r.pattern.replace_all(t, r.content); },
                   [&](const ByteFallbackDecode&) {
                     if (const int b = fallback_byte(t); b >= 0) {
                       t = std::string(1, static_cast<char>(b));
                       if (fallback) *fallback = true;
                     }
                   },
                   [](const FuseDecode&) {},
                   [](const StripDecode&) {},
               },
               step);
  }
  return t;
}

}  // namespace forge::text
