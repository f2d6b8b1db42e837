// Shared CLI conventions (see cli_util.h).
#include "cli_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>

#include "forge/error.h"
#include "forge/gpt2.h"
#include "forge/safetensors.h"

namespace forge::cli {

namespace fs = std::filesystem;

namespace {

// s as a whole number of type T (no sign for unsigned T, nothing after it).
template <class T>
bool whole_number(const std::string& s, T& v) {
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::vector<uint32_t> parse_id_list(const std::string& text, const std::string& flag, bool allow_none) {
  std::vector<uint32_t> ids;
  // Commas separate items, whitespace too; a comma with no id before it
  // ("1,,2", ",1", "1,") is a typo, not a separator to skip.
  bool comma_needs_id = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find_first_of(", \t\r\n", pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    if (!item.empty()) {
      uint64_t v = 0;
      if (!whole_number(item, v) || v > 0xFFFFFFFFull)
        throw UsageError(flag + " item '" + item + "' is not a token id (ids are separated by commas or spaces)");
      ids.push_back(uint32_t(v));
      comma_needs_id = false;
    }
    if (end < text.size() && text[end] == ',') {
      if (comma_needs_id || ids.empty())
        throw UsageError(flag + " has an empty item between commas in '" + text + "'");
      comma_needs_id = true;
    }
    pos = end + 1;
  }
  if (comma_needs_id) throw UsageError(flag + " ends with a comma in '" + text + "'");
  if (ids.empty() && !allow_none) throw UsageError(flag + " holds no token ids");
  return ids;
}

Tensor read_input_ids(const std::string& path, int64_t vocab, const std::string& who) {
  const std::string w = "[" + who + "] ";
  SafetensorsFile f = SafetensorsFile::open(path);
  TensorView v = f.get("input_ids");
  const bool i64 = v.dtype() == StDType::I64;
  if (!i64 && v.dtype() != StDType::I32)
    throw DTypeError(w + "input_ids in " + path + " must be I32 or I64, got " + st_dtype_name(v.dtype()));
  if (v.shape().size() != 2 || v.shape()[1] < 2)
    throw ShapeError(w + "input_ids in " + path + " must be [B, T] with T >= 2, got " + shape_str(v.shape()));
  std::vector<uint32_t> ids(size_t(v.numel()));
  for (size_t i = 0; i < ids.size(); ++i) {
    // Read as stored (little-endian), not through floats, which round past 2^24.
    int64_t id = 0;
    if (i64) {
      std::memcpy(&id, v.bytes.data() + i * 8, 8);
    } else {
      int32_t x = 0;
      std::memcpy(&x, v.bytes.data() + i * 4, 4);
      id = x;
    }
    if (id < 0 || id >= vocab)
      throw ValueError(w + "input_ids[" + std::to_string(i) + "] = " + std::to_string(id) +
                       " is out of range for vocab size " + std::to_string(vocab));
    ids[i] = uint32_t(id);
  }
  return Tensor::from_vector(ids, v.shape());
}

namespace {

// The spelling a message uses for an option: its short form when it has one.
std::string short_name(const CLI::Option* opt) {
  if (!opt->get_snames().empty()) return "-" + opt->get_snames()[0];
  if (!opt->get_lnames().empty()) return "--" + opt->get_lnames()[0];
  return opt->get_name(true, false);
}

std::string trim_number(double v) {
  std::string s = std::to_string(v);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

CLI::Option* check_at_least(CLI::Option* opt, int64_t min) {
  return check_int_between(opt, min, std::numeric_limits<int64_t>::max());
}

namespace {

// "2, 4 or 8".
std::string spoken_list(const std::vector<std::string>& items) {
  std::string list;
  for (size_t i = 0; i < items.size(); ++i) list += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return list;
}

// ">= 1" or "in [0, 8]".
std::string int_range(int64_t lo, int64_t hi) {
  return hi == std::numeric_limits<int64_t>::max() ? ">= " + std::to_string(lo)
                                                   : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// Why s is not an integer in [lo, hi] for option `name`, or "".
std::string int_error(const std::string& name, const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  if (!whole_number(s, v)) return name + " must be an integer, got '" + s + "'";
  if (v < lo || v > hi) return name + " must be " + int_range(lo, hi) + ", got " + s;
  return {};
}

}  // namespace

CLI::Option* check_int_between(CLI::Option* opt, int64_t lo, int64_t hi) {
  const std::string name = short_name(opt);
  return opt->check(
      CLI::Validator([name, lo, hi](std::string& s) { return int_error(name, s, lo, hi); }, int_range(lo, hi)));
}

std::vector<std::string> split_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> items;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    std::string item = text.substr(at, comma - at);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) throw UsageError(flag + " has an empty item in '" + text + "' (items are separated by commas)");
    items.push_back(item);
    at = comma + 1;
  }
  return items;
}

namespace {

// A list option whose items (every comma-separated value given) each pass
// check_item (an error text, or "") and are handed to store together.
CLI::Option* list_option(CLI::App& app, const std::string& name, const std::string& help,
                         std::function<std::string(const std::string&)> check_item,
                         std::function<void(const std::vector<std::string>&)> store) {
  CLI::Option* opt = app.add_option_function<std::vector<std::string>>(
      name,
      [name, store](const std::vector<std::string>& values) {
        std::vector<std::string> items;
        for (const std::string& v : values)
          for (std::string& item : split_list(v, name)) items.push_back(std::move(item));
        store(items);
      },
      help);
  return opt->check(CLI::Validator(
      [name, check_item](std::string& s) -> std::string {
        try {
          for (const std::string& item : split_list(s, name))
            if (std::string e = check_item(item); !e.empty()) return e;
        } catch (const UsageError& e) {
          return e.what();
        }
        return {};
      },
      ""));
}

}  // namespace

CLI::Option* add_list_option(CLI::App& app, const std::string& name, std::vector<std::string>& out,
                             const std::string& help, const std::vector<std::string>& allowed) {
  const std::string list = spoken_list(allowed);  // "nn, tn or nt"
  return list_option(
      app, name, help,
      [name, allowed, list](const std::string& item) -> std::string {
        if (allowed.empty() || std::find(allowed.begin(), allowed.end(), item) != allowed.end()) return {};
        return name + " items must be " + list + ", got '" + item + "'";
      },
      [&out](const std::vector<std::string>& items) { out = items; });
}

CLI::Option* add_int_list_option(CLI::App& app, const std::string& name, std::vector<int64_t>& out,
                                 const std::string& help, int64_t at_least) {
  return list_option(
      app, name, help,
      [name, at_least](const std::string& item) {
        return int_error(name, item, at_least, std::numeric_limits<int64_t>::max());
      },
      [&out](const std::vector<std::string>& items) {
        out.clear();
        for (const std::string& item : items) out.push_back(std::stoll(item));
      });
}

CLI::Option* check_int_in(CLI::Option* opt, const std::vector<int64_t>& allowed) {
  const std::string name = short_name(opt);
  std::vector<std::string> names;
  for (int64_t v : allowed) names.push_back(std::to_string(v));
  const std::string list = spoken_list(names);  // "2, 4 or 8"
  return opt->check(CLI::Validator(
      [name, allowed, list](std::string& s) -> std::string {
        int64_t v = 0;
        if (!whole_number(s, v)) return name + " must be an integer, got '" + s + "'";
        if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) return name + " must be " + list + ", got " + s;
        return {};
      },
      "one of " + list));
}

CLI::Option* check_unsigned(CLI::Option* opt) {
  const std::string name = short_name(opt);
  return opt->check(CLI::Validator(
      [name](std::string& s) -> std::string {
        uint64_t v = 0;
        if (!whole_number(s, v)) return name + " must be an integer in [0, 2^64), got '" + s + "'";
        return {};
      },
      ""));  // UINT says it
}

namespace {
std::set<const CLI::Option*>& empty_allowed() {
  static std::set<const CLI::Option*> options;
  return options;
}
}  // namespace

CLI::Option* may_be_empty(CLI::Option* opt) {
  empty_allowed().insert(opt);
  return opt;
}

void refuse_empty_values(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_expected_min() == 0 || empty_allowed().count(opt)) continue;  // a flag, or marked
    const std::string name = short_name(opt);
    opt->check(CLI::Validator(
        [name](std::string& s) -> std::string { return s.empty() ? name + " needs a value, got an empty string" : ""; },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_empty_values(*sub);
}

CLI::Option* check_between(CLI::Option* opt, double lo, double hi) {
  const std::string name = short_name(opt);
  const std::string range = std::isinf(hi) ? ">= " + trim_number(lo)
                                           : "in [" + trim_number(lo) + ", " + trim_number(hi) + "]";
  return opt->check(CLI::Validator(
      [name, lo, hi, range](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || std::isnan(v)) return name + " must be a number, got '" + s + "'";
        if (v < lo || v > hi) return name + " must be " + range + ", got " + s;
        return {};
      },
      range));
}

CLI::Option* add_preset_option(CLI::App& app, std::string& value, const std::string& help,
                               const std::string& names) {
  return app.add_option(names, value, help)
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            try {
              gpt2_preset(s);
              return {};
            } catch (const ValueError& e) {
              const std::string m = e.what();
              return m.starts_with("[gpt2] ") ? m.substr(7) : m;
            }
          },
          "124M|355M|774M|1.5B|tiny"));
}

CLI::Option* add_tokenizer_option(CLI::App& app, std::string& value, const std::string& help, bool allow_bytes) {
  return app.add_option("--tokenizer", value, help)
      ->check(CLI::Validator(
          [allow_bytes](std::string& s) -> std::string {
            if (allow_bytes && s == "bytes") return {};
            if (fs::exists(s)) return {};
            return "--tokenizer '" + s + "' does not exist (a tokenizer.json, a folder holding one" +
                   (allow_bytes ? std::string(", or 'bytes')") : std::string(")"));
          },
          allow_bytes ? "FILE|DIR|bytes" : "FILE|DIR"));
}

fs::path tokenizer_json_path(const fs::path& file_or_dir) {
  if (!fs::is_directory(file_or_dir)) return file_or_dir;
  const fs::path f = file_or_dir / "tokenizer.json";
  if (!fs::exists(f)) throw IoError("[tokenizer] folder '" + file_or_dir.string() + "' holds no tokenizer.json");
  return f;
}

fs::path check_model_dir(const std::string& path, const std::string& flag) {
  const fs::path p = path;
  const std::string q = "'" + path + "'";
  if (!fs::exists(p)) throw IoError(flag + " " + q + " does not exist (a model folder: config.json + safetensors)");
  if (!fs::is_directory(p)) {
    const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
    std::string hint = fs::exists(parent / "config.json") ? " (the model is its folder: " + flag + " " +
                                                                parent.string() + ")"
                                                          : "";
    throw IoError(flag + " " + q + " is a file; it takes a model folder (config.json + safetensors)" + hint);
  }
  if (fs::exists(p / "config.json")) return p;
  if (fs::exists(p / "checkpoint" / "config.json"))
    throw IoError(flag + " " + q + " is a training run; its model is in " + (p / "checkpoint").string() + " (" +
                  flag + " " + (p / "checkpoint").string() + ")");
  throw IoError(flag + " " + q + " is a folder without config.json, not a model folder");
}

namespace {

// A text file: no NUL byte in its first 8 KB (as git and grep decide).
bool looks_like_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  char buf[8192];
  f.read(buf, sizeof buf);
  return f.gcount() > 0 && std::find(buf, buf + f.gcount(), '\0') == buf + f.gcount();
}

}  // namespace

std::vector<std::string> expand_text_files(const std::vector<std::string>& paths, const std::string& flag) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    if (fs::is_regular_file(p)) {
      out.push_back(p);
      continue;
    }
    if (!fs::exists(p)) throw IoError(flag + " '" + p + "' does not exist");
    if (!fs::is_directory(p)) throw IoError(flag + " '" + p + "' is not a regular file");
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(p); it != fs::recursive_directory_iterator(); ++it) {
      const bool hidden = it->path().filename().string().starts_with(".");
      if (hidden && it->is_directory()) it.disable_recursion_pending();
      if (!hidden && it->is_regular_file() && looks_like_text(it->path())) found.push_back(it->path().string());
    }
    if (found.empty())
      throw IoError(flag + " '" + p + "' is a directory without text files (hidden and binary files are skipped)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace forge::cli
