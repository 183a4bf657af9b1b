//===- TrainingCaseFolder.cpp - a training case's step_K folders ----------===//
#include "distopt/Data/DataSource.h"
#include "distopt/Data/TensorProtoFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <map>

using namespace distopt;
using llvm::Expected;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

namespace {

class TrainingCaseFolder : public DataSource {
public:
  explicit TrainingCaseFolder(std::string dir) : dir(std::move(dir)) {}

  llvm::StringRef kind() const override { return "data"; }

  Expected<std::vector<distrt::Tensor>>
  read(int64_t step, llvm::ArrayRef<InputRequest> requests) override {
    // A pipeline's microbatches share one file: read it once per step.
    std::map<std::string, distrt::Tensor> stepFiles;
    std::vector<distrt::Tensor> out;
    for (const InputRequest &r : requests) {
      // Accumulating steps read step_K/micro_J/ for each microbatch; a
      // pipeline's microbatches are row slices of step_K/'s batch.
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, "step_" + std::to_string(step));
      if (r.microbatches > 1 && r.batchSplit == 1)
        llvm::sys::path::append(path, "micro_" + std::to_string(r.microbatch));
      llvm::sys::path::append(
          path, r.labels ? std::string("labels.pb")
                         : "input_" + std::to_string(r.index) + ".pb");
      auto cached = stepFiles.find(path.str().str());
      if (cached == stepFiles.end()) {
        auto read = readTensorProto(path);
        if (!read)
          return read.takeError();
        cached = stepFiles.emplace(path.str().str(), std::move(*read)).first;
      }
      const distrt::Tensor *t = &cached->second;
      distrt::Shape expected = r.input.shape;
      if (r.batchSplit > 1 && !expected.empty())
        expected[0] *= r.batchSplit;
      if (t->shape() != expected || t->dtype() != r.input.dtype)
        return fail(path + " holds " + distrt::DTypeName(t->dtype()) +
                    distrt::ShapeToString(t->shape()) + " but '" + r.base +
                    "' is " + distrt::DTypeName(r.input.dtype) +
                    distrt::ShapeToString(expected));
      if (r.batchSplit == 1) {
        out.push_back(*t);
        continue;
      }
      distrt::Tensor slice;
      distrt::Status st =
          distrt::Tensor::Allocate(r.input.dtype, r.input.shape, &slice);
      if (!st.ok())
        return fail(st.ToString());
      const char *from = static_cast<const char *>(t->raw());
      std::memcpy(slice.raw(), from + r.microbatch * slice.byte_size(),
                  slice.byte_size());
      out.push_back(std::move(slice));
    }
    return out;
  }

private:
  std::string dir;
};

} // namespace

std::unique_ptr<DataSource> distopt::trainingCaseFolder(std::string dir) {
  return std::make_unique<TrainingCaseFolder>(std::move(dir));
}
