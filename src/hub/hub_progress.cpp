#include "hub/hub_progress.h"

#include <unistd.h>

#include <cstdio>

namespace forge::hub {

using Clock = std::chrono::steady_clock;

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

Progress::Progress(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) == 1), begin_(Clock::now()) {}

void Progress::start_file(const std::string& name, uint64_t size, uint64_t resumed) {
  name_ = name;
  size_ = size;
  resumed_ = resumed;
  file_begin_ = last_draw_ = Clock::now();
  if (tty_ && !quiet_) draw(resumed, false);
}

void Progress::update(uint64_t done) {
  if (!tty_ || quiet_) return;
  auto now = Clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(done, false);
}

void Progress::end_file(uint64_t done) {
  bytes_ += done > resumed_ ? done - resumed_ : 0;
  ++files_;
  if (tty_ && !quiet_) draw(done, true);
}

void Progress::draw(uint64_t done, bool final) {
  constexpr int kWidth = 24;
  double frac = size_ ? static_cast<double>(done) / static_cast<double>(size_) : 1.0;
  if (frac > 1) frac = 1;
  std::string bar(kWidth, ' ');
  for (int i = 0; i < static_cast<int>(frac * kWidth); ++i) bar[i] = '#';
  double secs = std::chrono::duration<double>(Clock::now() - file_begin_).count();
  double rate = secs > 0 ? static_cast<double>(done - resumed_) / secs : 0;
  std::fprintf(stderr, "\r\033[K[hub] %s [%s] %3d%% %s / %s %s/s%s", name_.c_str(), bar.c_str(),
               static_cast<int>(frac * 100), human_bytes(done).c_str(), human_bytes(size_).c_str(),
               human_bytes(static_cast<uint64_t>(rate)).c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

void Progress::summary(const std::string& what, const std::string& dir) const {
  if (quiet_ || files_ == 0) return;
  double secs = std::chrono::duration<double>(Clock::now() - begin_).count();
  std::fprintf(stderr, "[hub] %s: downloaded %d file%s (%s) in %.1f s to %s\n", what.c_str(), files_,
               files_ == 1 ? "" : "s", human_bytes(bytes_).c_str(), secs, dir.c_str());
}

}  // namespace forge::hub
