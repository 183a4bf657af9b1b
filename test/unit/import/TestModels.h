//===- TestModels.h - build small ONNX models in tests ----------*- C++ -*-===//
#ifndef DISTOPT_TEST_UNIT_IMPORT_TESTMODELS_H
#define DISTOPT_TEST_UNIT_IMPORT_TESTMODELS_H

#include "onnx/onnx_pb.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace importtest {

using Dim = std::variant<int64_t, std::string>;

/// A model under construction: one graph, one default-domain opset.
struct TestModel {
  explicit TestModel(int64_t opset = 17);
  TestModel(const TestModel &other)
      : model(other.model), graph(model.mutable_graph()) {}
  TestModel &operator=(const TestModel &other) {
    model = other.model;
    graph = model.mutable_graph();
    return *this;
  }

  onnx::NodeProto &node(const std::string &op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs,
                        const std::string &name = "");
  void input(const std::string &name, int elemType, std::vector<Dim> dims);
  void output(const std::string &name, int elemType, std::vector<Dim> dims);
  /// A float initializer stored inline as raw_data.
  onnx::TensorProto &rawFloats(const std::string &name,
                               std::vector<int64_t> dims,
                               std::vector<float> values);
  /// An int64 initializer stored in int64_data.
  onnx::TensorProto &typedInts(const std::string &name,
                               std::vector<int64_t> dims,
                               std::vector<int64_t> values);

  onnx::ModelProto model;
  onnx::GraphProto *graph;
};

void setInt(onnx::NodeProto &n, const std::string &name, int64_t v);
void setInts(onnx::NodeProto &n, const std::string &name,
             std::vector<int64_t> v);
void setFloat(onnx::NodeProto &n, const std::string &name, float v);
void setString(onnx::NodeProto &n, const std::string &name,
               const std::string &v);

/// A fresh directory for this test process.
std::string tempDir();
/// Writes `bytes` to `name` in tempDir(); returns the path.
std::string writeFile(const std::string &name, const std::string &bytes);
std::string writeModel(const std::string &name, const onnx::ModelProto &m);

struct ImportResult {
  bool ok = false;
  std::string diagnostics; // every diagnostic, one per line
  std::string ir;          // the printed module when ok
};
ImportResult importFile(const std::string &path,
                        const llvm::StringMap<int64_t> &dims = {});
ImportResult importModel(const onnx::ModelProto &m,
                         const llvm::StringMap<int64_t> &dims = {});

/// The checked-in test data directory.
std::string testData(const std::string &relative);

} // namespace importtest

#endif // DISTOPT_TEST_UNIT_IMPORT_TESTMODELS_H
