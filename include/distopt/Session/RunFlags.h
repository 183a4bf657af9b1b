//===- RunFlags.h - the flags of the tools that run programs ----*- C++ -*-===//
//
// --backend and --threads mean the same in dist-run and dist-train.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SESSION_RUNFLAGS_H
#define DISTOPT_SESSION_RUNFLAGS_H

#include "distopt/Driver/CompilePipeline.h"
#include "distopt/Session/Session.h"

namespace distopt {

/// Removes `--threads N` / `--threads=N` from argv (libMLIR registers an
/// option of that name with LLVM's command-line library, so it is parsed by
/// hand) and returns N (1 when absent); an error when malformed.
llvm::Expected<int> takeThreadsFlag(int &argc, char **argv);

/// The --threads line and the runtime's environment variables, for the
/// tools' --help.
extern const char *const kRunHelpTail;

/// The --backend flag's value.
llvm::StringRef backendFlag();

/// Whether --profile was given: time every instruction and print the time
/// per op kind after the run (printProfile).
bool profileFlag();
/// --profile-top: how many slowest instructions the profile lists.
unsigned profileTopFlag();

/// A run's settings from --backend and --profile, with `threadsPerRank`
/// (takeThreadsFlag); an error naming an unknown backend.
llvm::Expected<RunSettings> runSettingsFromFlags(int threadsPerRank);

/// Compiles for the kernels of the device `settings` run on (--device; GPUs
/// under nccl), or for `settings.fusionTarget` when given: sets
/// `options.target` to that target description (Fusion/TargetDescription.h).
/// A device no description names keeps the default (opening it fails
/// later); an unknown --fusion-target is an error.
llvm::Error compileForDevice(CompileOptions &options,
                             const RunSettings &settings);

} // namespace distopt

#endif // DISTOPT_SESSION_RUNFLAGS_H
