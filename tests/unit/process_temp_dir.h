// A folder under the system temp dir private to this process (ctest runs
// tests and fuzzers side by side, each in a process of its own), created on
// first use and removed with its files when the process exits normally
// (libFuzzer too ends through exit(), which runs static destructors). A
// crash leaves it behind. For a folder bound to a scope, see ScratchDir
// (cli_process.h).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace forge::testing {

// "forge_<tag>_<pid>"; one folder a process: the first call's tag names it.
inline const std::filesystem::path& process_temp_dir(const std::string& tag) {
  static const struct Dir {
    std::filesystem::path path;
    explicit Dir(const std::string& t)
        : path(std::filesystem::temp_directory_path() / ("forge_" + t + "_" + std::to_string(::getpid()))) {
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir(tag);
  return dir.path;
}

}  // namespace forge::testing
