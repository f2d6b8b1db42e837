// Python string methods (see pystr.h).
#include "text/jinja/pystr.h"

#include <cctype>

#include "text/jinja/lexer.h"
#include "text/utf8.h"

namespace forge::text::jinja {
namespace {

// Python's str.isspace() code points.
bool py_space(std::uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

struct Cp {
  std::uint32_t cp;
  std::size_t at, len;
};

std::vector<Cp> decode(const std::string& s) {
  std::vector<Cp> out;
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Step st = utf8_next(s, i);
    out.push_back({st.cp, i, st.len});
    i += st.len;
  }
  return out;
}

}  // namespace

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  const auto cps = decode(s);
  std::vector<std::uint32_t> set;
  if (chars) {
    for (const auto& c : decode(*chars)) set.push_back(c.cp);
  }
  auto strip_it = [&](std::uint32_t c) {
    if (!chars) return py_space(c);
    for (auto x : set) {
      if (x == c) return true;
    }
    return false;
  };
  std::size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b].cp)) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1].cp)) --e;
  }
  if (b == e) return "";
  return s.substr(cps[b].at, cps[e - 1].at + cps[e - 1].len - cps[b].at);
}

std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep,
                                  long long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) fail(0, "split(): empty separator");
    std::size_t pos = 0;
    while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
      const std::size_t f = s.find(*sep, pos);
      if (f == std::string::npos) break;
      out.push_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  const auto cps = decode(s);
  std::size_t k = 0;
  while (k < cps.size()) {
    while (k < cps.size() && py_space(cps[k].cp)) ++k;
    if (k == cps.size()) break;
    if (maxsplit >= 0 && static_cast<long long>(out.size()) == maxsplit) {
      std::size_t e = cps.size();
      while (e > k && py_space(cps[e - 1].cp)) --e;
      out.push_back(s.substr(cps[k].at, cps[e - 1].at + cps[e - 1].len - cps[k].at));
      break;
    }
    const std::size_t b = k;
    while (k < cps.size() && !py_space(cps[k].cp)) ++k;
    out.push_back(s.substr(cps[b].at, cps[k - 1].at + cps[k - 1].len - cps[b].at));
  }
  return out;
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to, long long count,
                       std::size_t max_bytes, int line) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    const auto cps = decode(s);
    long long n = 0;
    for (const auto& c : cps) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      out.append(s, c.at, c.len);
      if (out.size() > max_bytes) fail(line, "replace(): result too large");
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  std::size_t pos = 0;
  long long n = 0;
  while (count < 0 || n < count) {
    const std::size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    if (out.size() > max_bytes) fail(line, "replace(): result too large");
    pos = f + from.size();
    ++n;
  }
  out.append(s, pos);
  return out;
}

std::string py_upper(std::string s) {
  for (auto& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

std::string py_lower(std::string s) {
  for (auto& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_letter = false;
  for (auto& c : out) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (letter) c = prev_letter ? static_cast<char>(std::tolower(c)) : static_cast<char>(std::toupper(c));
    prev_letter = letter;
  }
  return out;
}

std::string py_capitalize(const std::string& s) {
  std::string out = py_lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

}  // namespace forge::text::jinja
