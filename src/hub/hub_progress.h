// What a download shows on stderr: a progress bar per file when stderr is a
// terminal, and one summary line at the end of every download.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace forge::hub {

class Progress {
 public:
  explicit Progress(bool quiet);

  // A file of `size` bytes whose first `resumed` bytes are already on disk.
  void start_file(const std::string& name, uint64_t size, uint64_t resumed);
  void update(uint64_t done);  // bytes of the file on disk; redrawn at most 10 times a second
  void end_file(uint64_t done);
  // "[hub] org/name@commit: downloaded N files (SIZE) in T s to DIR", when anything was downloaded.
  void summary(const std::string& what, const std::string& dir) const;

 private:
  void draw(uint64_t done, bool final);

  bool quiet_, tty_;
  std::string name_;
  uint64_t size_ = 0, resumed_ = 0, bytes_ = 0;
  int files_ = 0;
  std::chrono::steady_clock::time_point begin_, file_begin_, last_draw_;
};

// 1536 -> "1.5 KiB".
std::string human_bytes(uint64_t n);

}  // namespace forge::hub
