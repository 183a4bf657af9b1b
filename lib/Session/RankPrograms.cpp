//===- RankPrograms.cpp - a compilation's programs for the runtime --------===//
#include "distopt/Session/RankPrograms.h"
#include "distopt/Export/RankProgramExport.h"
#include "distopt/Session/PointToPointCheck.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

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

llvm::Error distopt::savePackage(const Programs &programs, StringRef dir) {
  if (programs.empty())
    return fail("savePackage: no programs");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create " + dir + ": " + ec.message());
  distrt::proto::Package package;
  package.set_producer(programs.front()->proto().producer());
  *package.mutable_mesh() = programs.front()->proto().mesh();
  package.set_world_size(static_cast<int32_t>(programs.size()));
  // Every rank's inputs and outputs, once each, as whole tensors.
  auto addGlobal = [](const distrt::proto::Argument &arg,
                      google::protobuf::RepeatedPtrField<
                          distrt::proto::Argument> *into,
                      llvm::StringSet<> &seen) {
    if (!seen.insert(arg.name()).second)
      return;
    distrt::proto::Argument *global = into->Add();
    global->set_name(arg.name());
    global->set_dtype(arg.dtype());
    for (int64_t extent : arg.slice().global_shape()) {
      global->mutable_slice()->add_global_shape(extent);
      global->mutable_slice()->add_offsets(0);
      global->mutable_slice()->add_sizes(extent);
    }
  };
  llvm::StringSet<> inputs, outputs;
  for (size_t rank = 0; rank < programs.size(); ++rank) {
    const distrt::proto::RankProgram &proto = programs[rank]->proto();
    std::string file = "rank-" + std::to_string(rank) + ".pb";
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    distrt::Status st = distrt::SaveProgram(proto, path.str().str());
    if (!st.ok())
      return fail(st.ToString());
    package.add_program_files(file);
    for (const auto &arg : proto.inputs())
      addGlobal(arg, package.mutable_inputs(), inputs);
    for (const auto &arg : proto.outputs())
      addGlobal(arg, package.mutable_outputs(), outputs);
  }
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "package.pb");
  distrt::Status st = distrt::SavePackage(package, path.str().str());
  if (!st.ok())
    return fail(st.ToString());
  return llvm::Error::success();
}

int64_t distopt::microbatchesOf(const Programs &programs) {
  for (const auto &p : programs)
    if (p->proto().has_schedule() && p->proto().schedule().microbatches() > 0)
      return p->proto().schedule().microbatches();
  return 1;
}
