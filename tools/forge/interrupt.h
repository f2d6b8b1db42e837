// Stopping a long command cleanly: while a StopSignals is alive, SIGINT and
// SIGTERM only set a flag that the command polls between units of work (a
// training step), so it can save its state and exit with 128 + the signal. A
// second signal exits at once (the default action is restored after the first).
#pragma once

namespace forge::cli {

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received (SIGINT or SIGTERM), or 0.
  int received() const;
  // "SIGINT" / "SIGTERM".
  static const char* name(int sig);
};

}  // namespace forge::cli
