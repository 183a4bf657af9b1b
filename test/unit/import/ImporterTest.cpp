//===- ImporterTest.cpp - importer diagnostics and forms on built models -===//
//
// Small models built with the generated ONNX classes: each bad input gives a
// diagnostic naming what is wrong (node, op type and opset, tensor, file);
// and a few forms that are awkward to write with onnx.helper.
//
//===----------------------------------------------------------------------===//
#include "TestModels.h"

#include <gtest/gtest.h>

using namespace importtest;
using onnx::TensorProto;

namespace {

constexpr int F32 = TensorProto::FLOAT;
constexpr int I64 = TensorProto::INT64;

/// A model with one float input x[2,3] and one node `op`(x) -> y.
TestModel unaryModel(const std::string &op, int64_t opset = 17) {
  TestModel m(opset);
  m.input("x", F32, {int64_t(2), int64_t(3)});
  m.node(op, {"x"}, {"y"}, "the_node");
  m.output("y", F32, {int64_t(2), int64_t(3)});
  return m;
}

#define EXPECT_ERROR(result, text)                                             \
  do {                                                                         \
    ImportResult r_ = (result);                                                \
    EXPECT_FALSE(r_.ok);                                                       \
    EXPECT_NE(r_.diagnostics.find(text), std::string::npos)                    \
        << "diagnostics were:\n"                                               \
        << r_.diagnostics;                                                     \
  } while (0)

#define EXPECT_IMPORTS(result, text)                                           \
  do {                                                                         \
    ImportResult r_ = (result);                                                \
    EXPECT_TRUE(r_.ok) << r_.diagnostics;                                      \
    EXPECT_NE(r_.ir.find(text), std::string::npos) << r_.ir;                   \
  } while (0)

} // namespace

TEST(ImporterErrors, UnknownOpNamesNodeTypeAndOpset) {
  EXPECT_ERROR(importModel(unaryModel("NonZero").model),
               "node 'the_node' (NonZero, opset 17): operator 'NonZero' is "
               "not supported by the importer");
}

TEST(ImporterErrors, OpNewerThanTheModelsOpset) {
  TestModel m = unaryModel("Gelu", 17);
  EXPECT_ERROR(importModel(m.model),
               "node 'the_node' (Gelu, opset 17): operator 'Gelu' needs opset "
               "20 or newer");
  EXPECT_IMPORTS(importModel(unaryModel("Gelu", 20).model), "nn.gelu");
}

TEST(ImporterErrors, UnsupportedOpsets) {
  EXPECT_ERROR(importModel(unaryModel("Relu", 5).model),
               "node 'the_node' (Relu, opset 5): the importer supports "
               "operator 'Relu' from opset 6 on");
  EXPECT_ERROR(importModel(unaryModel("Relu", 0).model),
               "default-domain opset 0 is not supported (supported: 1 to 23)");
  EXPECT_IMPORTS(importModel(unaryModel("Softsign", 1).model), "nn.");
  EXPECT_IMPORTS(importModel(unaryModel("Relu", 23).model), "nn.relu");
  EXPECT_ERROR(importModel(unaryModel("Relu", 24).model),
               "default-domain opset 24 is not supported");
  TestModel m = unaryModel("Relu");
  m.model.mutable_opset_import(0)->set_domain("com.example");
  EXPECT_ERROR(importModel(m.model),
               "the model imports no version of the default ONNX opset");
}

TEST(ImporterErrors, UnknownDomain) {
  TestModel m = unaryModel("Relu");
  m.graph->mutable_node(0)->set_domain("com.microsoft");
  EXPECT_ERROR(importModel(m.model),
               "node 'the_node' (Relu, opset 17): operator domain "
               "'com.microsoft' is not supported");
}

TEST(ImporterErrors, AttributesCheckedAgainstOpset) {
  {
    TestModel m = unaryModel("Softmax");
    setInt(*m.graph->mutable_node(0), "axes", 1);
    EXPECT_ERROR(importModel(m.model),
                 "(Softmax, opset 17): attribute 'axes' is not supported for "
                 "this op in this opset");
  }
  {
    TestModel m = unaryModel("Softmax");
    setFloat(*m.graph->mutable_node(0), "axis", 1.0f);
    EXPECT_ERROR(importModel(m.model),
                 "attribute 'axis' must be of type int, not float");
  }
  {
    // Squeeze's axes attribute became an input at opset 13.
    TestModel m(13);
    m.input("x", F32, {int64_t(1), int64_t(3)});
    setInts(m.node("Squeeze", {"x"}, {"y"}, "sq"), "axes", {0});
    m.output("y", F32, {int64_t(3)});
    EXPECT_ERROR(importModel(m.model),
                 "node 'sq' (Squeeze, opset 13): attribute 'axes' is not "
                 "supported");
    m.model.mutable_opset_import(0)->set_version(11);
    EXPECT_IMPORTS(importModel(m.model), "nn.reshape");
  }
  {
    TestModel m(17);
    m.input("x", F32, {int64_t(2)});
    m.node("Cast", {"x"}, {"y"}, "c");
    m.output("y", I64, {int64_t(2)});
    EXPECT_ERROR(importModel(m.model),
                 "(Cast, opset 17): required attribute 'to' is missing");
  }
}

TEST(ImporterErrors, InputAndOutputCounts) {
  TestModel m;
  m.input("x", F32, {int64_t(2)});
  m.node("Add", {"x", "x", "x"}, {"y"}, "add3");
  m.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(m.model),
               "node 'add3' (Add, opset 17): has 3 inputs; this opset takes 2");
  TestModel s(12);
  s.input("x", F32, {int64_t(4)});
  s.typedInts("starts", {1}, {0});
  s.node("Slice", {"x", "starts"}, {"y"}, "sl");
  s.output("y", F32, {int64_t(4)});
  EXPECT_ERROR(importModel(s.model),
               "(Slice, opset 12): has 2 inputs; this opset takes 3 to 5");
}

TEST(ImporterErrors, UndefinedAndOutOfOrderInputs) {
  TestModel m;
  m.input("x", F32, {int64_t(2)});
  m.node("Relu", {"later"}, {"y"}, "first");
  m.node("Relu", {"x"}, {"later"}, "second");
  m.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(m.model),
               "node 'first' (Relu, opset 17): input 0 'later' is produced by "
               "a later node; the graph's nodes are not in topological order");
  TestModel d;
  d.input("x", F32, {int64_t(2)});
  d.node("Relu", {"x"}, {"y"}, "a");
  d.node("Relu", {"x"}, {"y"}, "b");
  d.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(d.model),
               "node 'b' (Relu, opset 17): output 0 'y' is already defined");
  TestModel o;
  o.input("x", F32, {int64_t(2)});
  o.node("Relu", {"x"}, {"y"}, "a");
  o.output("z", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(o.model), "graph output 'z' is never produced");
}

TEST(ImporterErrors, SymbolicDimensions) {
  TestModel m;
  m.input("x", F32, {std::string("batch"), int64_t(3)});
  m.node("Relu", {"x"}, {"y"}, "r");
  m.output("y", F32, {std::string("batch"), int64_t(3)});
  EXPECT_ERROR(importModel(m.model),
               "input 'x' dimension 0 is the symbol 'batch'; bind it with "
               "--dim batch=N");
  EXPECT_IMPORTS(importModel(m.model, {{"batch", 5}}), "tensor<5x3xf32>");
  TestModel u;
  u.input("x", F32, {int64_t(2)});
  u.graph->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim();
  u.node("Relu", {"x"}, {"y"}, "r");
  u.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(u.model),
               "input 'x' dimension 1 has neither a size nor a symbol");
}

TEST(ImporterErrors, DeclaredOutputMustMatch) {
  TestModel m;
  m.input("x", F32, {int64_t(2), int64_t(3)});
  m.node("Relu", {"x"}, {"y"}, "r");
  m.output("y", F32, {int64_t(3), int64_t(2)});
  EXPECT_ERROR(importModel(m.model),
               "graph output 'y' has a declared shape that differs from the "
               "computed 'tensor<2x3xf32>'");
}

TEST(ImporterErrors, UnsupportedElementTypes) {
  TestModel m;
  m.input("x", TensorProto::STRING, {int64_t(2)});
  m.node("Identity", {"x"}, {"y"}, "i");
  m.output("y", TensorProto::STRING, {int64_t(2)});
  EXPECT_ERROR(importModel(m.model),
               "input 'x' has element type STRING, which is not supported");
  TestModel w;
  w.input("x", F32, {int64_t(2)});
  TensorProto &t = *w.graph->add_initializer();
  t.set_name("c64");
  t.set_data_type(TensorProto::COMPLEX64);
  t.add_dims(2);
  w.node("Add", {"x", "c64"}, {"y"}, "a");
  w.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(w.model),
               "initializer 'c64' has element type COMPLEX64, which is not "
               "supported");
}

TEST(ImporterErrors, InitializerDataMustFit) {
  TestModel m;
  m.input("x", F32, {int64_t(3)});
  m.rawFloats("w", {3}, {1, 2});
  m.node("Add", {"x", "w"}, {"y"}, "a");
  m.output("y", F32, {int64_t(3)});
  EXPECT_ERROR(importModel(m.model),
               "initializer 'w' has 8 bytes of raw data but its shape and type "
               "need 12");
  TestModel t;
  t.input("x", I64, {int64_t(3)});
  t.typedInts("w", {3}, {1, 2});
  t.node("Add", {"x", "w"}, {"y"}, "a");
  t.output("y", I64, {int64_t(3)});
  EXPECT_ERROR(importModel(t.model),
               "initializer 'w': it holds 2 values in int64_data but its shape "
               "needs 3");
}

namespace {

TestModel externalModel(const std::string &location, int64_t offset,
                        int64_t length = -1) {
  TestModel m;
  m.input("x", F32, {int64_t(2), int64_t(2)});
  TensorProto &w = *m.graph->add_initializer();
  w.set_name("w");
  w.set_data_type(F32);
  w.add_dims(2);
  w.add_dims(2);
  w.set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const char *k, const std::string &v) {
    auto *e = w.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  if (length >= 0)
    add("length", std::to_string(length));
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.output("y", F32, {int64_t(2), int64_t(2)});
  return m;
}

} // namespace

TEST(ImporterExternalData, ReferencesAndChecks) {
  writeFile("ext/weights.bin", std::string(64, '\1'));
  std::string ok =
      writeModel("ext/ok.onnx", externalModel("weights.bin", 16, 16).model);
  EXPECT_IMPORTS(importFile(ok),
                 "nn.weight \"w\" file \"weights.bin\" offset 16 : "
                 "tensor<2x2xf32>");
  EXPECT_ERROR(importFile(writeModel("ext/short.onnx",
                                     externalModel("weights.bin", 56).model)),
               "initializer 'w' needs bytes [56, 72) of 'weights.bin', which "
               "has 64 bytes");
  EXPECT_ERROR(importFile(writeModel(
                   "ext/len.onnx", externalModel("weights.bin", 0, 12).model)),
               "initializer 'w' has external length 12 but its shape and type "
               "need 16 bytes");
  EXPECT_ERROR(importFile(writeModel("ext/missing.onnx",
                                     externalModel("nothere.bin", 0).model)),
               "initializer 'w': external data file 'nothere.bin' is missing");
  for (const char *bad :
       {"../weights.bin", "/etc/passwd", "a/../../x.bin", "..\\x.bin"})
    EXPECT_ERROR(
        importFile(writeModel("ext/escape.onnx", externalModel(bad, 0).model)),
        "outside the model's directory");
  TestModel m = externalModel("weights.bin", 0);
  m.graph->mutable_initializer(0)->mutable_external_data(1)->set_value("x12");
  EXPECT_ERROR(importFile(writeModel("ext/badoffset.onnx", m.model)),
               "initializer 'w' has an invalid external data offset 'x12'");
}

TEST(ImporterErrors, ShapeInputsMustBeKnown) {
  TestModel m;
  m.input("x", F32, {int64_t(2), int64_t(3)});
  m.input("s", I64, {int64_t(2)});
  m.node("Reshape", {"x", "s"}, {"y"}, "rs");
  m.output("y", F32, {int64_t(3), int64_t(2)});
  EXPECT_ERROR(importModel(m.model),
               "node 'rs' (Reshape, opset 17): the target shape (input 1 's') "
               "must be known when importing");
}

TEST(ImporterErrors, OperandsThatDoNotFitAreDiagnosedNotCrashes) {
  TestModel m;
  m.input("a", F32, {int64_t(2), int64_t(3)});
  m.input("b", F32, {int64_t(4), int64_t(5)});
  m.node("MatMul", {"a", "b"}, {"y"}, "mm");
  m.output("y", F32, {int64_t(2), int64_t(5)});
  EXPECT_ERROR(
      importModel(m.model),
      "node 'mm' (MatMul, opset 17): cannot be expressed as nn.matmul");
  TestModel a;
  a.input("a", F32, {int64_t(2), int64_t(3)});
  a.input("b", F32, {int64_t(4)});
  a.node("Add", {"a", "b"}, {"y"}, "add");
  a.output("y", F32, {int64_t(2), int64_t(3)});
  EXPECT_ERROR(importModel(a.model), "node 'add' (Add, opset 17): cannot be "
                                     "expressed as nn.add: operand shapes");
  TestModel t;
  t.input("a", F32, {int64_t(2)});
  t.input("b", I64, {int64_t(2)});
  t.node("Add", {"a", "b"}, {"y"}, "add");
  t.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(t.model),
               "input 1 has element type 'i64' but input 0 has 'f32'");
}

TEST(ImporterErrors, InferenceOnly) {
  TestModel m(13);
  m.input("x", F32, {int64_t(2)});
  TensorProto &t = *m.graph->add_initializer();
  t.set_name("training");
  t.set_data_type(TensorProto::BOOL);
  t.add_int32_data(1);
  m.node("Dropout", {"x", "", "training"}, {"y"}, "drop");
  m.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(m.model),
               "node 'drop' (Dropout, opset 13): training-mode dropout is not "
               "supported");
}

TEST(ImporterErrors, StringConstants) {
  TestModel m;
  m.node("Constant", {}, {"c"}, "k");
  setString(*m.graph->mutable_node(0), "value_string", "hello");
  m.output("c", TensorProto::STRING, {});
  EXPECT_ERROR(importModel(m.model),
               "node 'k' (Constant, opset 17): string constants (value_string) "
               "are not supported");
}

TEST(ImporterErrors, MissingGraphAndEmptyGraph) {
  onnx::ModelProto noGraph;
  noGraph.add_opset_import()->set_version(17);
  EXPECT_ERROR(importModel(noGraph), "the model has no graph");
  TestModel empty;
  EXPECT_ERROR(importModel(empty.model), "the graph has no outputs");
}

TEST(ImporterForms, UnnamedNodesGetAName) {
  TestModel m;
  m.input("x", F32, {int64_t(2)});
  m.node("NonZero", {"x"}, {"y"}).clear_name();
  m.output("y", F32, {int64_t(2)});
  EXPECT_ERROR(importModel(m.model), "node 'NonZero#0' (NonZero, opset 17)");
}

TEST(ImporterForms, AttributeWithoutTypeField) {
  // Old exporters leave AttributeProto.type unset.
  TestModel m(9);
  m.input("x", F32, {int64_t(2), int64_t(3)});
  onnx::NodeProto &n = m.node("Transpose", {"x"}, {"y"}, "t");
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name("perm");
  a->add_ints(1);
  a->add_ints(0);
  m.output("y", F32, {int64_t(3), int64_t(2)});
  EXPECT_IMPORTS(importModel(m.model), "nn.transpose %arg0 perm [1, 0]");
}

TEST(ImporterForms, WeightValuesFeedShapeArithmetic) {
  // A Reshape whose shape is a raw-data int64 initializer read from the file.
  TestModel m;
  m.input("x", F32, {int64_t(2), int64_t(3)});
  TensorProto &s = *m.graph->add_initializer();
  s.set_name("shape");
  s.set_data_type(I64);
  s.add_dims(2);
  int64_t v[2] = {3, -1};
  s.set_raw_data(std::string(reinterpret_cast<char *>(v), sizeof(v)));
  m.node("Reshape", {"x", "shape"}, {"y"}, "rs");
  m.output("y", F32, {int64_t(3), int64_t(2)});
  ImportResult r = importModel(m.model);
  EXPECT_TRUE(r.ok) << r.diagnostics;
  EXPECT_NE(r.ir.find("nn.reshape %arg0 : tensor<2x3xf32> -> tensor<3x2xf32>"),
            std::string::npos);
  // The shape tensor itself is not needed in the IR.
  EXPECT_EQ(r.ir.find("nn.weight \"shape\""), std::string::npos);
}

TEST(ImporterForms, SparseConstant) {
  TestModel m;
  onnx::NodeProto &n = m.node("Constant", {}, {"c"}, "k");
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name("sparse_value");
  a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
  onnx::SparseTensorProto *sp = a->mutable_sparse_tensor();
  sp->add_dims(2);
  sp->add_dims(3);
  sp->mutable_values()->set_data_type(F32);
  sp->mutable_values()->add_dims(2);
  sp->mutable_values()->add_float_data(7);
  sp->mutable_values()->add_float_data(9);
  sp->mutable_indices()->set_data_type(I64);
  sp->mutable_indices()->add_dims(2);
  sp->mutable_indices()->add_int64_data(1);
  sp->mutable_indices()->add_int64_data(5);
  m.output("c", F32, {int64_t(2), int64_t(3)});
  EXPECT_IMPORTS(importModel(m.model),
                 "nn.constant dense<[[0.000000e+00, 7.000000e+00, "
                 "0.000000e+00], [0.000000e+00, 0.000000e+00, 9.000000e+00]]>");
}
