//===- RunFolder.cpp - a run's inputs and outputs as ONNX test files ------===//
#include "distopt/Data/RunFolder.h"
#include "distopt/Support/WritableTarget.h"
#include "distopt/Data/TensorProtoFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace distopt;
namespace fs = llvm::sys::fs;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

llvm::Error distopt::checkRunFolderTarget(llvm::StringRef dir) {
  if (fs::exists(dir)) {
    if (!fs::is_directory(dir))
      return fail(dir + " exists and is not a directory");
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec)
      return fail("cannot read " + dir + ": " + ec.message());
    if (it != fs::directory_iterator())
      return fail(dir + " is not empty; give a new or empty directory so "
                        "no file of another run is mixed in");
    return llvm::Error::success();
  }
  return checkWritableParent(dir, "cannot create " + dir,
                             /*missingParentsAllowed=*/false);
}

static llvm::Error writeTensors(llvm::StringRef dir, llvm::StringRef prefix,
                                llvm::ArrayRef<distrt::NamedTensor> tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, prefix + "_" + llvm::Twine(i) + ".pb");
    if (llvm::Error e =
            writeTensorProto(path, tensors[i].name, tensors[i].tensor))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error distopt::writeRunFolder(
    llvm::StringRef dir,
    llvm::ArrayRef<std::vector<distrt::NamedTensor>> inputs,
    llvm::ArrayRef<std::vector<distrt::NamedTensor>> outputs) {
  for (size_t j = 0; j < outputs.size(); ++j) {
    llvm::SmallString<256> at(dir);
    if (outputs.size() > 1)
      llvm::sys::path::append(at, "micro_" + llvm::Twine(j));
    if (std::error_code ec = fs::create_directories(at))
      return fail("cannot create " + at + ": " + ec.message());
    if (j < inputs.size())
      if (llvm::Error e = writeTensors(at, "input", inputs[j]))
        return e;
    if (llvm::Error e = writeTensors(at, "output", outputs[j]))
      return e;
  }
  return llvm::Error::success();
}
