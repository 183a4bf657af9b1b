//===- OnnxImportFuzzTest.cpp - malformed models give errors ----*- C++ -*-===//
//
// Mutations of the importer's test models (test/data/onnx and the small
// exported models) go through importOnnxModel: structure-aware edits of the
// ModelProto (op types, attributes, shapes, dtypes, names, opsets, weight
// bytes) and raw byte edits of the file. Every outcome is a module that
// verifies or a failure with a diagnostic; never a crash.
//
//===----------------------------------------------------------------------===//
#include "../support/CompilerTestContext.h"
#include "Mutator.h"

#include "distopt/Driver/Compilation.h"
#include "distopt/Import/OnnxImporter.h"
#include "distopt/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "onnx/onnx_pb.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace distopt;

namespace {

const char *kOpTypes[] = {"MatMul",     "Add",       "Gemm",
                          "Conv",       "Reshape",   "Transpose",
                          "Gather",     "Softmax",   "Slice",
                          "Concat",     "Split",     "LayerNormalization",
                          "ReduceMean", "Where",     "Expand",
                          "Cast",       "Unsqueeze", "Pad",
                          "Range",      "NoSuchOp",  ""};

/// One structural edit of `model`.
void mutateModel(onnx::ModelProto &model, fuzztest::Mutator &m) {
  onnx::GraphProto *g = model.mutable_graph();
  switch (m.pick(10)) {
  case 0: // an op becomes another
    if (g->node_size())
      g->mutable_node(m.pick(g->node_size()))
          ->set_op_type(kOpTypes[m.pick(sizeof(kOpTypes) / sizeof(*kOpTypes))]);
    break;
  case 1: // an integer attribute (or a list entry) gets a nasty value
    if (g->node_size()) {
      onnx::NodeProto *n = g->mutable_node(m.pick(g->node_size()));
      if (n->attribute_size()) {
        onnx::AttributeProto *a =
            n->mutable_attribute(m.pick(n->attribute_size()));
        if (a->ints_size())
          a->set_ints(m.pick(a->ints_size()), m.nastyNumber());
        else
          a->set_i(m.nastyNumber());
      }
    }
    break;
  case 2: // an attribute disappears
    if (g->node_size()) {
      onnx::NodeProto *n = g->mutable_node(m.pick(g->node_size()));
      if (n->attribute_size())
        n->mutable_attribute()->DeleteSubrange(m.pick(n->attribute_size()), 1);
    }
    break;
  case 3: // an input or output name points elsewhere
    if (g->node_size()) {
      onnx::NodeProto *n = g->mutable_node(m.pick(g->node_size()));
      if (n->input_size() && m.pick(2))
        n->set_input(m.pick(n->input_size()),
                     m.pick(2) ? "dangling"
                               : g->node(m.pick(g->node_size())).output(0));
      else if (n->output_size())
        n->set_output(m.pick(n->output_size()), m.pick(2) ? "" : "dup");
    }
    break;
  case 4: // an initializer's dims change
    if (g->initializer_size()) {
      onnx::TensorProto *t =
          g->mutable_initializer(m.pick(g->initializer_size()));
      if (t->dims_size())
        t->set_dims(m.pick(t->dims_size()), m.nastyNumber());
      else
        t->add_dims(m.nastyNumber());
    }
    break;
  case 5: // an initializer's dtype or bytes change
    if (g->initializer_size()) {
      onnx::TensorProto *t =
          g->mutable_initializer(m.pick(g->initializer_size()));
      if (m.pick(2))
        t->set_data_type(static_cast<int32_t>(m.pick(24)));
      else if (t->has_raw_data())
        t->mutable_raw_data()->resize(m.pick(t->raw_data().size() + 8));
    }
    break;
  case 6: // a graph input's shape changes
    if (g->input_size()) {
      auto *shape = g->mutable_input(m.pick(g->input_size()))
                        ->mutable_type()
                        ->mutable_tensor_type()
                        ->mutable_shape();
      if (shape->dim_size() && m.pick(3)) {
        auto *d = shape->mutable_dim(m.pick(shape->dim_size()));
        if (m.pick(2))
          d->set_dim_value(m.nastyNumber());
        else
          d->set_dim_param(m.pick(2) ? "batch" : "");
      } else {
        shape->add_dim()->set_dim_value(m.pick(5));
      }
    }
    break;
  case 7: // the opset changes
    if (model.opset_import_size())
      model.mutable_opset_import(0)->set_version(m.pick(2) ? m.nastyNumber()
                                                           : 1 + m.pick(22));
    break;
  case 8: // nodes out of order, or one dropped
    if (g->node_size() > 1) {
      if (m.pick(2))
        g->mutable_node()->SwapElements(m.pick(g->node_size()),
                                        m.pick(g->node_size()));
      else
        g->mutable_node()->DeleteSubrange(m.pick(g->node_size()), 1);
    }
    break;
  default: // an output's declared type
    if (g->output_size())
      g->mutable_output(m.pick(g->output_size()))
          ->mutable_type()
          ->mutable_tensor_type()
          ->set_elem_type(static_cast<int32_t>(m.pick(20)));
    break;
  }
}

TEST(OnnxImportFuzz, MutatedModelsImportOrFailWithADiagnostic) {
  auto corpus = fuzztest::readCorpus(DISTOPT_TEST_DATA "/onnx", ".onnx");
  for (const char *name : {"mlp_op17", "gpt_op17", "cnn_op17", "llama_op13"})
    for (auto &file : fuzztest::readCorpus(
             std::string(DISTOPT_TEST_DATA "/models/") + name, ".onnx"))
      corpus.push_back(file);
  ASSERT_GE(corpus.size(), 40u);
  distopt::testing::CompilerTestContext env("onnx-fuzz");
  mlir::MLIRContext &ctx = env.context();
  ctx.printOpOnDiagnostic(false);
  int &errors = env.errors;
  bool verbose = std::getenv("DISTOPT_FUZZ_VERBOSE") != nullptr;
  fuzztest::Mutator m(20261124);
  const int perSeed = 200;
  int imported = 0, refused = 0, partitioned = 0;
  for (const auto &[seedPath, bytes] : corpus) {
    onnx::ModelProto seed;
    ASSERT_TRUE(seed.ParseFromString(bytes)) << seedPath;
    for (int i = 0; i < perSeed; ++i) {
      std::string mutated;
      if (i % 4 == 3) {
        mutated = m.mutateBytes(bytes);
      } else {
        onnx::ModelProto model = seed;
        for (int e = 0, n = 1 + m.pick(3); e < n; ++e)
          mutateModel(model, m);
        model.SerializeToString(&mutated);
      }
      std::string path = env.writeScratchFile("model.onnx", mutated);
      if (verbose)
        llvm::errs() << "---- " << seedPath << " #" << i << "\n";
      errors = 0;
      // Symbolic dimensions of the seed bound small (a mutation may add
      // or drop symbols: then the import refuses, with a diagnostic).
      ImportOptions options;
      for (const auto &input : seed.graph().input())
        for (const auto &dim : input.type().tensor_type().shape().dim())
          if (dim.has_dim_param() && !dim.dim_param().empty())
            options.dims[dim.dim_param()] = 2;
      mlir::OwningOpRef<mlir::ModuleOp> module =
          importOnnxModel(ctx, path, options);
      if (!module) {
        EXPECT_GT(errors, 0) << seedPath << " #" << i
                             << ": the import failed without a diagnostic";
        ++refused;
        continue;
      }
      EXPECT_TRUE(succeeded(mlir::verify(*module)))
          << seedPath << " #" << i << ": the imported module does not verify";
      ++imported;
      // What imports must also survive the sharding passes.
      CompileOptions compile;
      compile.dims = options.dims;
      compile.meshSpec = "dp=2,tp=2";
      auto plan = parsePlans(&ctx, {"dp,tp"});
      ASSERT_TRUE(succeeded(plan));
      compile.plan = std::move(*plan);
      errors = 0;
      auto compilation = Compilation::compile(ctx, path, compile);
      if (failed(compilation)) {
        EXPECT_GT(errors, 0) << seedPath << " #" << i
                             << ": the compile failed without a diagnostic";
        continue;
      }
      if (succeeded((*compilation)->partitionForRank(1)))
        ++partitioned;
    }
  }
  EXPECT_GT(imported, 0);
  llvm::outs() << "onnx fuzz: " << corpus.size() * perSeed << " mutations, "
               << imported << " imported (" << partitioned
               << " partitioned for 4 devices), " << refused
               << " refused with a diagnostic, 0 crashes\n";
}

} // namespace
