//===- Profile.h - where a rank's run time goes -----------------*- C++ -*-===//
//
// The table dist-run --profile and dist-train --profile print: per op kind,
// calls and milliseconds per run and the share of the time spent in
// instructions, slowest first, from distrt's RunStats::op_times; then the
// slowest instructions (RunStats::instruction_times) with their output
// type and the model's node.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SESSION_PROFILE_H
#define DISTOPT_SESSION_PROFILE_H

#include "distrt/executor.h"
#include "llvm/Support/raw_ostream.h"

namespace distopt {

/// Prints rank `rank`'s profile (one write, then a flush), listing its
/// `slowestShown` slowest instructions; a note when the executor did not
/// profile.
void printProfile(llvm::raw_ostream &os, int rank,
                  const distrt::RunStats &stats, size_t slowestShown = 10);

} // namespace distopt

#endif // DISTOPT_SESSION_PROFILE_H
