// Ctrl-C and SIGTERM as a request to stop training cleanly: finish the step, write a checkpoint,
// say how to resume, exit 130 (SIGINT) or 143 (SIGTERM), as a shell reports a process ended by
// those signals. A second signal ends the process at once. nanoGPT users stop a run with Ctrl-C
// and resume it; here that costs no step and loses no work.
//
// The signal handler only records the signal (an atomic store: all a handler may safely do);
// the trainer reads it between steps (Trainer::stop_on), so a step is never cut in half and the
// checkpoint is as consistent as any other. With several ranks the trainer sums the flag over
// them every step, so every rank stops at the same step even when only one was signalled.
#pragma once

#include <atomic>
#include <csignal>
#include <stdexcept>
#include <string>

#include "gpt/train/trainer.h"

namespace attograd::gpt {

/// While alive, the first SIGINT or SIGTERM is recorded in signal() instead of ending the
/// process; a second one of either restores the default action and raises it again, so the
/// process ends at once as it would have without this object (a shell then reports 130 or 143).
/// The previous handlers come back when it is destroyed. One at a time per process (the flag is
/// process-wide): constructing a second while one is alive throws std::logic_error.
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  /// 0 until a signal arrived, then its number (SIGINT or SIGTERM). Give it to
  /// Trainer::stop_on or TrainingRun::train.
  static const std::atomic<int>& signal();

 private:
  struct sigaction previous_int_ {
  }, previous_term_{};
};

/// "SIGINT (Ctrl-C)", "SIGTERM", or "signal N".
std::string signal_name(int signal);

/// Thrown by Trainer::run, on every rank at the same step, when the stop flag was set: the step
/// finished and, when the run has an output directory, its checkpoint at that step was written.
/// exit_code() is 128 + the signal's number, as a shell reports a process the signal ended.
class Interrupted : public CollectiveError {
 public:
  Interrupted(int signal, int64_t step, int64_t max_steps);
  int signal() const { return signal_; }
  int64_t step() const { return step_; }

 private:
  int signal_;
  int64_t step_;
};

}  // namespace attograd::gpt
