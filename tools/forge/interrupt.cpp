// SIGINT / SIGTERM as a polled flag (see interrupt.h).
#include "interrupt.h"

#include <atomic>
#include <csignal>

namespace forge::cli {

namespace {

std::atomic<int> g_signal{0};
struct sigaction g_old_int, g_old_term;

extern "C" void on_stop_signal(int sig) {
  g_signal.store(sig);
  // The next one takes the default action: Ctrl-C twice stops at once.
  std::signal(sig, SIG_DFL);
}

}  // namespace

StopSignals::StopSignals() {
  g_signal.store(0);
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int StopSignals::received() const { return g_signal.load(); }

const char* StopSignals::name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace forge::cli
