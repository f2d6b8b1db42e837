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

namespace {

// Simple case mappings of the scripts chat text mostly uses: ASCII, Latin-1,
// Latin Extended-A, Greek and Cyrillic (Python maps all of Unicode; other
// letters pass through unchanged here).
std::uint32_t to_upper_cp(std::uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
  if (c == 0xff) return 0x178;
  if (c >= 0x100 && c <= 0x17f && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17f) {
    const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if (odd_upper ? (c % 2 == 0) : (c % 2 == 1)) return c - 1;
    return c;
  }
  if (c >= 0x3b1 && c <= 0x3cb && c != 0x3c2) return c - 32;
  if (c == 0x3c2) return 0x3a3;
  if (c == 0x3ac) return 0x386;
  if (c >= 0x3ad && c <= 0x3af) return c - 37;
  if (c == 0x3cc) return 0x38c;
  if (c == 0x3cd || c == 0x3ce) return c - 63;
  if (c >= 0x430 && c <= 0x44f) return c - 32;
  if (c >= 0x450 && c <= 0x45f) return c - 80;
  return c;
}

std::uint32_t to_lower_cp(std::uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 32;
  if (c == 0x178) return 0xff;
  if (c >= 0x100 && c <= 0x17f && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17f) {
    const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if (odd_upper ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3ab && c != 0x3a2) return c + 32;
  if (c == 0x386) return 0x3ac;
  if (c >= 0x388 && c <= 0x38a) return c + 37;
  if (c == 0x38c) return 0x3cc;
  if (c == 0x38e || c == 0x38f) return c + 63;
  if (c >= 0x410 && c <= 0x42f) return c + 32;
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
}

bool is_cased_letter(std::uint32_t c) { return to_upper_cp(c) != c || to_lower_cp(c) != c || c == 0xdf; }

// Maps each code point; U+00DF (sharp s) upper-cases to "SS" as in Python.
template <class F>
std::string map_cps(const std::string& s, F f) {
  std::string out;
  out.reserve(s.size());
  for (const auto& c : decode(s)) {
    if (c.cp == kInvalidCodePoint) {
      out.append(s, c.at, c.len);
    } else {
      f(c.cp, out);
    }
  }
  return out;
}

}  // namespace

std::string py_upper(std::string s) {
  return map_cps(s, [](std::uint32_t c, std::string& out) {
    if (c == 0xdf) {
      out += "SS";
    } else {
      utf8_append(out, to_upper_cp(c));
    }
  });
}

std::string py_lower(std::string s) {
  return map_cps(s, [](std::uint32_t c, std::string& out) { utf8_append(out, to_lower_cp(c)); });
}

// str.title(): a cased letter after an uncased character starts a word.
std::string py_title(const std::string& s) {
  bool prev_cased = false;
  return map_cps(s, [&](std::uint32_t c, std::string& out) {
    const bool cased = is_cased_letter(c);
    if (cased && !prev_cased) {
      if (c == 0xdf) {
        out += "Ss";
      } else {
        utf8_append(out, to_upper_cp(c));
      }
    } else {
      utf8_append(out, to_lower_cp(c));
    }
    prev_cased = cased;
  });
}

// str.capitalize(): the first character upper-cased, the rest lower-cased.
std::string py_capitalize(const std::string& s) {
  bool first = true;
  return map_cps(s, [&](std::uint32_t c, std::string& out) {
    if (first) {
      if (c == 0xdf) {
        out += "Ss";
      } else {
        utf8_append(out, to_upper_cp(c));
      }
    } else {
      utf8_append(out, to_lower_cp(c));
    }
    first = false;
  });
}

std::string jinja_title(const std::string& s) {
  bool chunk_start = true;
  return map_cps(s, [&](std::uint32_t c, std::string& out) {
    const bool sep = py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      utf8_append(out, c);
      chunk_start = true;
    } else if (chunk_start) {
      if (c == 0xdf) {
        out += "SS";  // item[0].upper()
      } else {
        utf8_append(out, to_upper_cp(c));
      }
      chunk_start = false;
    } else {
      utf8_append(out, to_lower_cp(c));
    }
  });
}

}  // namespace forge::text::jinja
