// Running `forge ARGS` through the shell from tests (popen), for tests that
// read its stdout (with or without stderr) and exit code, and parse the JSON
// object a command ends with.
#pragma once
#include <sys/wait.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "unit/this_build.h"

namespace forge::testing {

struct CliResult {
  int code;
  std::string out;  // stdout (and stderr when asked)
};

inline CliResult run_forge(const std::string& args, bool with_stderr = true) {
  const std::string cmd =
      std::string(forge::testing::cli_path()) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The last line of `out` parsed as JSON.
inline nlohmann::json last_json_line(const std::string& out) {
  size_t end = out.find_last_not_of('\n');
  size_t start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1, end - start));
}

// A fresh folder under the system temp dir, removed at the end of the scope.
struct CliTempDir {
  std::filesystem::path path;
  explicit CliTempDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("forge_cli_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~CliTempDir() { std::filesystem::remove_all(path); }
  CliTempDir(const CliTempDir&) = delete;
  CliTempDir& operator=(const CliTempDir&) = delete;
};

}  // namespace forge::testing
