// Umbrella header for the distrt runtime.
#ifndef DISTRT_DISTRT_H_
#define DISTRT_DISTRT_H_

#include "distrt/communicator.h"
#include "distrt/dtype.h"
#include "distrt/executor.h"
#include "distrt/launcher.h"
#include "distrt/local_comm.h"
#include "distrt/program.h"
#include "distrt/program_builder.h"
#include "distrt/status.h"
#include "distrt/tensor.h"

#endif  // DISTRT_DISTRT_H_
