//===- TimelineSvg.h - a pipeline timeline as a picture ---------*- C++ -*-===//
#ifndef DISTOPT_PIPELINESTAGES_TIMELINESVG_H
#define DISTOPT_PIPELINESTAGES_TIMELINESVG_H

#include "distopt/PipelineStages/Schedule.h"

#include "llvm/Support/raw_ostream.h"

namespace distopt {

/// An SVG picture of the timeline: stages as rows, time across, microbatches
/// coloured.
void writeTimelineSvg(const ScheduleTimeline &timeline, int64_t numStages,
                      int64_t microbatches, llvm::StringRef title,
                      llvm::raw_ostream &os);

} // namespace distopt

#endif // DISTOPT_PIPELINESTAGES_TIMELINESVG_H
