//===- DataFiles.h - hand-made data files for the data tests ----*- C++ -*-===//
//
// A scratch directory, removed at the end of the test, and ONNX TensorProto
// files written with onnx's own classes (not with the reader under test).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TEST_UNIT_DATA_DATAFILES_H
#define DISTOPT_TEST_UNIT_DATA_DATAFILES_H

#include "onnx/onnx_pb.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace distopt::datafiles {

class ScratchDir {
public:
  ScratchDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("data-test", dir));
  }
  ~ScratchDir() { llvm::sys::fs::remove_directories(dir); }
  /// `dir`/`relative`, its parent directories created.
  std::string path(llvm::StringRef relative) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, relative);
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(p));
    return p.str().str();
  }
  std::string root() const { return dir.str().str(); }

private:
  llvm::SmallString<128> dir;
};

inline void writeProto(const std::string &path, const onnx::TensorProto &t) {
  std::ofstream out(path, std::ios::binary);
  ASSERT_TRUE(out && t.SerializeToOstream(&out)) << path;
}

/// A float tensor in float_data.
inline onnx::TensorProto floats(std::vector<int64_t> dims,
                                std::vector<float> values,
                                const std::string &name = "") {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t.add_dims(d);
  for (float v : values)
    t.add_float_data(v);
  return t;
}

/// An int64 tensor in int64_data.
inline onnx::TensorProto int64s(std::vector<int64_t> dims,
                                std::vector<int64_t> values,
                                const std::string &name = "") {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims)
    t.add_dims(d);
  for (int64_t v : values)
    t.add_int64_data(v);
  return t;
}

} // namespace distopt::datafiles

#endif // DISTOPT_TEST_UNIT_DATA_DATAFILES_H
