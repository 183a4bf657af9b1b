//===- PointToPointCheck.h - every send has its receive ---------*- C++ -*-===//
#ifndef DISTOPT_SESSION_POINTTOPOINTCHECK_H
#define DISTOPT_SESSION_POINTTOPOINTCHECK_H

#include "distopt/Session/RankPrograms.h"

namespace distopt {

/// Checks, before anything runs, that every send has its receive: for each
/// pair of ranks the tags (and sizes) sent equal those received (messages
/// are matched by peer and tag). A mismatch would deadlock or mix messages.
llvm::Error checkPointToPoint(const Programs &programs);

} // namespace distopt

#endif // DISTOPT_SESSION_POINTTOPOINTCHECK_H
