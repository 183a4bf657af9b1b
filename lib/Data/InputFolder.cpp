//===- InputFolder.cpp - input_<i>.pb files in a folder -------------------===//
#include "distopt/Data/DataSource.h"
#include "distopt/Data/TensorProtoFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <optional>

using namespace distopt;
using llvm::Expected;

namespace {

class InputFolder : public DataSource {
public:
  explicit InputFolder(std::string dir) : dir(std::move(dir)) {}

  llvm::StringRef kind() const override { return "inputs"; }

  Expected<std::vector<distrt::Tensor>>
  read(int64_t batch, llvm::ArrayRef<InputRequest> requests) override {
    std::vector<distrt::Tensor> out;
    for (const InputRequest &r : requests) {
      auto t = readOne(r);
      if (!t)
        return t.takeError();
      out.push_back(std::move(*t));
    }
    return out;
  }

private:
  std::string path(int k) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, "input_" + std::to_string(k) + ".pb");
    return p.str().str();
  }

  Expected<distrt::Tensor> readOne(const InputRequest &r) const {
    // ONNX test data names its tensors; match by name, else by position.
    for (int k = 0;; ++k) {
      std::string p = path(k);
      if (!llvm::sys::fs::exists(p))
        break;
      std::string fileName;
      auto t = readTensorProto(p, &fileName);
      if (!t)
        return t.takeError();
      if (fileName == r.input.name || (fileName.empty() && k == r.index))
        return t;
    }
    return readTensorProto(path(r.index));
  }

  std::string dir;
};

} // namespace

std::unique_ptr<DataSource> distopt::inputFolder(std::string dir) {
  return std::make_unique<InputFolder>(std::move(dir));
}
