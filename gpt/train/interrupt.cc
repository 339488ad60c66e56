#include "gpt/train/interrupt.h"

#include <unistd.h>

namespace attograd::gpt {

namespace {

std::atomic<int> g_signal{0};       // the first signal caught, 0 before
std::atomic<bool> g_active{false};  // a StopOnSignals is alive
static_assert(std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) return;  // the first: stop after the step
  // The second: end now, as the signal would have without us.
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install(int sig, struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a write or read the signal interrupts goes on
  sigaction(sig, &action, previous);
}

}  // namespace

StopOnSignals::StopOnSignals() {
  if (g_active.exchange(true))
    throw std::logic_error("StopOnSignals: one is alive already (the flag is process-wide)");
  g_signal = 0;
  install(SIGINT, &previous_int_);
  install(SIGTERM, &previous_term_);
}

StopOnSignals::~StopOnSignals() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  g_active = false;
}

const std::atomic<int>& StopOnSignals::signal() { return g_signal; }

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT (Ctrl-C)";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

Interrupted::Interrupted(int signal, int64_t step, int64_t max_steps)
    : CollectiveError("interrupted by " + signal_name(signal) + " after step " +
                          std::to_string(step) + " of " + std::to_string(max_steps),
                      128 + signal),
      signal_(signal),
      step_(step) {}

}  // namespace attograd::gpt
