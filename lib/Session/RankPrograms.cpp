//===- RankPrograms.cpp - a compilation's programs for the runtime --------===//
#include "distopt/Session/RankPrograms.h"
#include "distopt/Export/RankProgramExport.h"
#include "distopt/Session/PointToPointCheck.h"

using namespace mlir;
using namespace distopt;
using llvm::Expected;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

Expected<Programs> distopt::exportPrograms(Compilation &compilation) {
  Programs programs;
  ExportOptions exportOptions;
  exportOptions.weightDir = compilation.weightDirectory();
  if (const PipelineSpec *pp = compilation.pipeline();
      pp && !compilation.isTraining()) {
    exportOptions.microbatches = pp->microbatches;
    exportOptions.numStages = compilation.numStages();
    exportOptions.scheduleKind = pp->schedule;
  }
  StringRef modelPath = compilation.modelPath();
  for (int64_t rank = 0, n = compilation.numRanks(); rank < n; ++rank) {
    auto local = compilation.partitionForRank(rank);
    if (failed(local))
      return fail("cannot partition " + modelPath + " for rank " +
                  llvm::Twine(rank));
    if (compilation.pipeline()) {
      int64_t stage = compilation.stageOfRank(rank);
      exportOptions.stage = stage;
      exportOptions.schedule.clear();
      // A training stage runs its whole schedule in one program.
      if (!compilation.isTraining())
        for (const ScheduleAction &a : compilation.schedule(stage))
          exportOptions.schedule.push_back({a.microbatch, a.forward()});
    }
    FailureOr<distrt::proto::RankProgram> proto =
        exportRankProgram(**local, rank, exportOptions);
    if (failed(proto))
      return fail("cannot export rank " + llvm::Twine(rank));
    std::shared_ptr<const distrt::Program> program;
    distrt::Status st = distrt::Program::Create(
        std::move(*proto),
        "rank " + std::to_string(rank) + " of " + modelPath.str(),
        exportOptions.weightDir, &program);
    if (!st.ok())
      return fail("rank " + llvm::Twine(rank) + ": " + st.ToString());
    programs.push_back(std::move(program));
  }
  if (auto err = checkPointToPoint(programs))
    return std::move(err);
  return programs;
}

Expected<Programs> distopt::compilePrograms(MLIRContext &ctx,
                                            StringRef modelPath,
                                            const CompileOptions &options) {
  auto compilation = Compilation::compile(ctx, modelPath, options);
  if (failed(compilation))
    return fail("cannot compile " + modelPath);
  return exportPrograms(**compilation);
}

int64_t distopt::microbatchesOf(const Programs &programs) {
  for (const auto &p : programs)
    if (p->proto().has_schedule() && p->proto().schedule().microbatches() > 0)
      return p->proto().schedule().microbatches();
  return 1;
}
