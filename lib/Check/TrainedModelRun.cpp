//===- TrainedModelRun.cpp - run a model with trained weights -------------===//
#include "distopt/Check/TrainedModelRun.h"
#include "distopt/Session/ProgramInputs.h"
#include "distopt/Session/Session.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace distopt;
using llvm::Expected;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

Expected<std::vector<distrt::NamedTensor>>
distopt::runTrainedModel(mlir::MLIRContext &ctx, StringRef modelPath,
                         const std::vector<distrt::NamedTensor> &trained,
                         StringRef inputDir, StringRef workDir, int threads) {
  CompileOptions single;
  single.singleDevice = true;
  // The trained f32 masters of a 16-bit model, used as they are.
  single.forwardInF32 = true;
  single.workDir = workDir.str();
  auto programs = compilePrograms(ctx, modelPath, single);
  if (!programs)
    return programs.takeError();
  // The trained tensors, one after another in one file the program's
  // weights point at.
  llvm::SmallString<256> file(workDir);
  llvm::sys::path::append(file, "trained-weights.bin");
  std::map<std::string, std::pair<uint64_t, distrt::DType>> offsets;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    if (ec)
      return fail("cannot write " + file + ": " + ec.message());
    uint64_t at = 0;
    for (const distrt::NamedTensor &t : trained) {
      offsets[t.name] = {at, t.tensor.dtype()};
      os.write(static_cast<const char *>(t.tensor.raw()), t.tensor.byte_size());
      at += t.tensor.byte_size();
    }
  }
  Programs patched;
  for (const auto &p : *programs) {
    distrt::proto::RankProgram proto = p->proto();
    for (distrt::proto::Weight &w : *proto.mutable_weights()) {
      auto it = offsets.find(w.name());
      if (it == offsets.end())
        continue;
      w.set_file(file.str().str());
      w.set_offset(it->second.first);
      // An f32 master of a 16-bit model's weight: the loader rounds it to
      // the weight's dtype, as --save does.
      w.set_dtype(static_cast<distrt::proto::DType>(it->second.second));
    }
    std::shared_ptr<const distrt::Program> program;
    distrt::Status st = distrt::Program::Create(
        std::move(proto), "trained " + modelPath.str(), "", &program);
    if (!st.ok())
      return fail(st.ToString());
    patched.push_back(std::move(program));
  }
  auto inputs = makeInputs(patched, inputDir, 0);
  if (!inputs)
    return inputs.takeError();
  return runLocal(patched, *inputs, threads);
}
