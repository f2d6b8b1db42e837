// Running the forge CLI from tests as a child process (no shell in between),
// so a test can send it signals, cap its file size (RLIMIT_FSIZE) or set its
// environment, and read its exit status and output.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "unit/this_build.h"

namespace forge::testing {

struct CliOptions {
  long long max_file_size = -1;                            // RLIMIT_FSIZE in bytes; -1: none
  std::vector<std::pair<std::string, std::string>> env;    // set in the child
  std::filesystem::path stdin_file;                        // the child's stdin; empty: inherited
  std::filesystem::path stderr_file;                       // stderr apart from stdout; empty: with it
};

// A running `forge ARGS...`; stdout and stderr go to one file.
class CliProcess {
 public:
  CliProcess(const std::vector<std::string>& args, const std::filesystem::path& output, const CliOptions& o = {})
      : output_(output) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) ::_exit(120);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (!o.stderr_file.empty()) {
        const int err = ::open(o.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err < 0) ::_exit(123);
        ::dup2(err, 2);
      }
      if (!o.stdin_file.empty()) {
        const int in = ::open(o.stdin_file.c_str(), O_RDONLY);
        if (in < 0) ::_exit(122);
        ::dup2(in, 0);
      }
      // One CPU thread: fast on a busy machine, and the same arithmetic in every run.
      ::setenv("OMP_NUM_THREADS", "1", 0);
      for (const auto& [k, v] : o.env) ::setenv(k.c_str(), v.c_str(), 1);
      if (o.max_file_size >= 0) {
        const rlimit r{rlim_t(o.max_file_size), rlim_t(o.max_file_size)};
        ::setrlimit(RLIMIT_FSIZE, &r);
      }
      std::vector<char*> argv;
      std::string exe = forge::testing::cli_path();
      argv.push_back(exe.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      ::_exit(121);
    }
  }
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;
  ~CliProcess() {
    if (!done_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  void signal(int sig) { ::kill(pid_, sig); }

  // Exit code, or 128 + the signal that ended it (as a shell reports it).
  int wait() {
    if (!done_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      code_ = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
      signalled_ = WIFSIGNALED(status);
      done_ = true;
    }
    return code_;
  }
  // wait(), but kills the process after `limit`: false when it had to.
  bool wait_for(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!finished()) {
      if (std::chrono::steady_clock::now() > end) {
        signal(SIGKILL);
        wait();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  // Whether it ended by a signal rather than exiting.
  bool signalled() {
    wait();
    return signalled_;
  }
  // Finished already (without blocking)?
  bool finished() {
    if (done_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    signalled_ = WIFSIGNALED(status);
    done_ = true;
    return true;
  }
  std::string output() const {
    std::ifstream f(output_);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

 private:
  std::filesystem::path output_;
  pid_t pid_ = -1;
  bool done_ = false, signalled_ = false;
  int code_ = -1;
};

struct CliRun {
  int code;
  std::string out;  // stdout and stderr
};

// Runs `forge ARGS...` to the end.
inline CliRun run_cli(const std::vector<std::string>& args, const std::filesystem::path& scratch,
                      const CliOptions& o = {}) {
  CliProcess p(args, scratch / "cli_output.txt", o);
  const int code = p.wait();
  return {code, p.output()};
}

// Lines of a text.
inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The last line of a command's output, "" when it printed none (a command
// that could not start): parsing that fails the test instead of reading past
// an empty list.
inline std::string last_line(const std::string& s) {
  const std::vector<std::string> lines = lines_of(s);
  return lines.empty() ? std::string() : lines.back();
}

// A fresh folder under the system temp dir, removed at the end of the scope.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("forge_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

// Some English-like text, deterministic.
inline void write_sample_text(const std::filesystem::path& p, int words = 1500) {
  const char* w[] = {"the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "far", "away", "from",
                     "home", "to", "see", "sea"};
  std::ofstream f(p);
  uint32_t s = 7;
  for (int i = 0; i < words; ++i) {
    s = s * 1103515245u + 12345u;
    f << w[(s >> 16) % 17] << ((s >> 8) % 9 == 0 ? ".\n" : " ");
  }
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace forge::testing
