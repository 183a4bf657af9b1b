//===- StopRequest.cpp - Ctrl-C and SIGTERM end a run between steps -------===//
#include "distopt/Trainer/StopRequest.h"

#include <atomic>
#include <csignal>

static std::atomic<int> requested{0};

extern "C" void distoptOnStopSignal(int signal) {
  int none = 0;
  if (!requested.compare_exchange_strong(none, signal)) {
    // Asked twice: the user means it.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

void distopt::catchStopSignals() {
  std::signal(SIGINT, distoptOnStopSignal);
  std::signal(SIGTERM, distoptOnStopSignal);
}

int distopt::stopSignal() { return requested.load(); }

const char *distopt::stopSignalName(int signal) {
  switch (signal) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  default:
    return "a signal";
  }
}
