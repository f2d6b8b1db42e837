// Python str methods the templates call (strip, split, replace, case changes),
// on UTF-8 text by code point. Case changes cover ASCII, Latin-1, Latin
// Extended-A, Greek and Cyrillic; other scripts pass through unchanged.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace forge::text::jinja {

// str.strip / lstrip / rstrip: `chars` null strips Unicode whitespace (str.isspace).
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit): sep null splits on whitespace runs; maxsplit < 0 is unlimited.
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep,
                                  long long maxsplit);
// str.replace(old, new, count); count < 0 replaces all. Throws past `max_bytes`.
std::string py_replace(const std::string& s, const std::string& from, const std::string& to, long long count,
                       std::size_t max_bytes, int line);
std::string py_upper(std::string s);
std::string py_lower(std::string s);
std::string py_title(const std::string& s);
std::string py_capitalize(const std::string& s);
// jinja2's title filter (not str.title): each chunk between runs of
// whitespace, '-', '(', '{', '[' or '<' gets its first character upper-cased
// and the rest lower-cased.
std::string jinja_title(const std::string& s);

}  // namespace forge::text::jinja
