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

static bool isFloat(distrt::DType d) {
  return d == distrt::DType::kF32 || d == distrt::DType::kBF16 ||
         d == distrt::DType::kF16;
}

/// Whether a file of `file` values feeds an input of `input` by converting
/// (float data of another float dtype: an f32 data set for a bf16 model).
static bool convertsFloats(distrt::DType file, distrt::DType input) {
  return file != input && isFloat(file) && isFloat(input);
}

static float floatAt(const distrt::Tensor &t, int64_t i) {
  switch (t.dtype()) {
  case distrt::DType::kBF16:
    return distrt::BF16ToFloat(t.data<uint16_t>()[i]);
  case distrt::DType::kF16:
    return distrt::HalfToFloat(t.data<uint16_t>()[i]);
  default:
    return t.data<float>()[i];
  }
}

/// `t`'s floats in dtype `to` (f32, bf16 or f16), rounded to nearest even.
static Expected<distrt::Tensor> convertFloats(const distrt::Tensor &t,
                                              distrt::DType to) {
  distrt::Tensor out;
  distrt::Status st = distrt::Tensor::Allocate(to, t.shape(), &out);
  if (!st.ok())
    return fail(st.ToString());
  for (int64_t i = 0, n = t.num_elements(); i < n; ++i) {
    float v = floatAt(t, i);
    if (to == distrt::DType::kBF16)
      out.data<uint16_t>()[i] = distrt::FloatToBF16(v);
    else if (to == distrt::DType::kF16)
      out.data<uint16_t>()[i] = distrt::FloatToHalf(v);
    else
      out.data<float>()[i] = v;
  }
  return out;
}

/// step_K/'s file (its microbatch's folder when accumulating) for `r`.
static llvm::SmallString<256> filePath(llvm::StringRef dir, int64_t step,
                                       const InputRequest &r) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "step_" + std::to_string(step));
  if (r.microbatches > 1 && r.batchSplit == 1)
    llvm::sys::path::append(path, "micro_" + std::to_string(r.microbatch));
  llvm::sys::path::append(path, r.labels ? std::string("labels.pb")
                                         : "input_" + std::to_string(r.index) +
                                               ".pb");
  return path;
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
      llvm::SmallString<256> path = filePath(dir, step, r);
      auto cached = stepFiles.find(path.str().str());
      if (cached == stepFiles.end()) {
        auto read = readTensorProto(path);
        if (!read)
          return read.takeError();
        // Float data of another float dtype (an f32 data set fed to a bf16
        // model) is converted; notes() says so once.
        if (convertsFloats(read->dtype(), r.input.dtype)) {
          auto converted = convertFloats(*read, r.input.dtype);
          if (!converted)
            return converted.takeError();
          *read = std::move(*converted);
        }
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

  std::vector<std::string>
  notes(llvm::ArrayRef<InputRequest> requests) const override {
    std::vector<std::string> out;
    for (const InputRequest &r : requests) {
      if (r.microbatch != 0)
        continue;
      llvm::SmallString<256> path = filePath(dir, 0, r);
      auto read = readTensorProto(path);
      if (!read) {
        llvm::consumeError(read.takeError()); // read() reports it
        continue;
      }
      if (convertsFloats(read->dtype(), r.input.dtype))
        out.push_back(path.str().str() + " holds " +
                      distrt::DTypeName(read->dtype()) + " values and '" +
                      r.base + "' is " + distrt::DTypeName(r.input.dtype) +
                      ": every step's values are " +
                      (r.input.dtype == distrt::DType::kF32
                           ? std::string("widened to f32")
                           : "rounded to " + distrt::DTypeName(r.input.dtype) +
                                 " (nearest even)"));
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
