//===- TestModels.cpp - build small ONNX models in tests --------*- C++ -*-===//
#include "TestModels.h"

#include "distopt/Import/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstring>
#include <fstream>

using namespace importtest;

TestModel::TestModel(int64_t opset) {
  model.set_ir_version(8);
  model.set_producer_name("distopt-unit-tests");
  auto *imp = model.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  graph = model.mutable_graph();
  graph->set_name("g");
}

onnx::NodeProto &TestModel::node(const std::string &op,
                                 std::vector<std::string> inputs,
                                 std::vector<std::string> outputs,
                                 const std::string &name) {
  onnx::NodeProto *n = graph->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + std::to_string(graph->node_size())
                           : name);
  for (auto &i : inputs)
    n->add_input(i);
  for (auto &o : outputs)
    n->add_output(o);
  return *n;
}

static void fillValueInfo(onnx::ValueInfoProto *v, const std::string &name,
                          int elemType, const std::vector<Dim> &dims) {
  v->set_name(name);
  auto *tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  auto *shape = tt->mutable_shape();
  for (const Dim &d : dims) {
    auto *dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d))
      dim->set_dim_value(std::get<int64_t>(d));
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
}

void TestModel::input(const std::string &name, int elemType,
                      std::vector<Dim> dims) {
  fillValueInfo(graph->add_input(), name, elemType, dims);
}

void TestModel::output(const std::string &name, int elemType,
                       std::vector<Dim> dims) {
  fillValueInfo(graph->add_output(), name, elemType, dims);
}

onnx::TensorProto &TestModel::rawFloats(const std::string &name,
                                        std::vector<int64_t> dims,
                                        std::vector<float> values) {
  onnx::TensorProto *t = graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t->add_dims(d);
  std::string raw(values.size() * 4, '\0');
  std::memcpy(raw.data(), values.data(), raw.size());
  t->set_raw_data(raw);
  return *t;
}

onnx::TensorProto &TestModel::typedInts(const std::string &name,
                                        std::vector<int64_t> dims,
                                        std::vector<int64_t> values) {
  onnx::TensorProto *t = graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims)
    t->add_dims(d);
  for (int64_t v : values)
    t->add_int64_data(v);
  return *t;
}

static onnx::AttributeProto *addAttr(onnx::NodeProto &n,
                                     const std::string &name,
                                     onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

void importtest::setInt(onnx::NodeProto &n, const std::string &name,
                        int64_t v) {
  addAttr(n, name, onnx::AttributeProto::INT)->set_i(v);
}

void importtest::setInts(onnx::NodeProto &n, const std::string &name,
                         std::vector<int64_t> v) {
  auto *a = addAttr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a->add_ints(x);
}

void importtest::setFloat(onnx::NodeProto &n, const std::string &name,
                          float v) {
  addAttr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}

void importtest::setString(onnx::NodeProto &n, const std::string &name,
                           const std::string &v) {
  addAttr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}

namespace {
/// A directory for this process's files, removed at exit.
struct TempDir {
  std::string path;
  TempDir() {
    llvm::SmallString<128> p;
    if (!llvm::sys::fs::createUniqueDirectory("distopt-import-tests", p))
      path = std::string(p);
  }
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};
} // namespace

std::string importtest::tempDir() {
  static TempDir dir;
  return dir.path;
}

std::string importtest::writeFile(const std::string &name,
                                  const std::string &bytes) {
  llvm::SmallString<128> path(tempDir());
  llvm::sys::path::append(path, name);
  llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
  std::ofstream out(std::string(path), std::ios::binary);
  out.write(bytes.data(), bytes.size());
  return std::string(path);
}

std::string importtest::writeModel(const std::string &name,
                                   const onnx::ModelProto &m) {
  std::string bytes;
  m.SerializeToString(&bytes);
  return writeFile(name, bytes);
}

ImportResult importtest::importFile(const std::string &path,
                                    const llvm::StringMap<int64_t> &dims) {
  mlir::MLIRContext context;
  ImportResult result;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    result.diagnostics += d.str() + "\n";
    return mlir::success();
  });
  distopt::ImportOptions options;
  for (auto &e : dims)
    options.dims[e.getKey()] = e.getValue();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      distopt::importOnnxModel(context, path, options);
  result.ok = static_cast<bool>(module);
  if (module) {
    llvm::raw_string_ostream os(result.ir);
    module->print(os);
  }
  return result;
}

ImportResult importtest::importModel(const onnx::ModelProto &m,
                                     const llvm::StringMap<int64_t> &dims) {
  static std::atomic<int> counter{0};
  std::string path = writeModel("m" + std::to_string(counter++) + ".onnx", m);
  return importFile(path, dims);
}

std::string importtest::testData(const std::string &relative) {
  return std::string(DISTOPT_TEST_DATA) + "/" + relative;
}
