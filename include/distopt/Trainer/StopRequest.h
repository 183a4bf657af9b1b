//===- StopRequest.h - Ctrl-C and SIGTERM end a run between steps -*- C++ -*-===//
//
// A training run asked to stop (SIGINT from Ctrl-C, SIGTERM from a job
// scheduler) finishes the step it is in, saves its checkpoint and exits,
// instead of dying with the state of hours in memory. A second signal ends
// the process at once (the default action).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINER_STOPREQUEST_H
#define DISTOPT_TRAINER_STOPREQUEST_H

namespace distopt {

/// Catches SIGINT and SIGTERM from now on: the first is recorded, the
/// second has its default effect.
void catchStopSignals();

/// The signal that asked the run to stop, or 0.
int stopSignal();

/// "SIGINT", "SIGTERM", or the number.
const char *stopSignalName(int signal);

} // namespace distopt

#endif // DISTOPT_TRAINER_STOPREQUEST_H
