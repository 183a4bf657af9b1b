//===- onnx-import-test.cpp - import an ONNX model and print it -*- C++ -*-===//
//
// A small test driver for the importer (not installed): imports a model and
// prints the nn-dialect module, or the importer's diagnostics.
//
//   onnx-import-test model.onnx [--dim batch=2,seq=16] [--debug-info]
//                    [--input-value shape=2,3 --input-value k:=1 ...]
//   onnx-import-test --list-ops      (the op table, as markdown)
//
//===----------------------------------------------------------------------===//
#include "distopt/Import/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace cl = llvm::cl;

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::init(""));
static cl::opt<std::string>
    dimSpec("dim",
            cl::desc("Sizes of symbolic dimensions, e.g. batch=2,seq=16"),
            cl::init(""));
static cl::list<std::string> inputValueSpecs(
    "input-value",
    cl::desc("Values of a graph input the importer may read where an op needs "
             "them: name=v,v,... (the declared shape) or name:DxD=v,... "
             "(name:=v for a scalar); repeatable"));
static cl::opt<bool> debugInfo("debug-info",
                               cl::desc("Print locations (node names)"),
                               cl::init(false));
static cl::opt<bool> listOps("list-ops",
                             cl::desc("Print the supported ops and exit"),
                             cl::init(false));
static cl::opt<bool> timing("time", cl::desc("Print the import time to stderr"),
                            cl::init(false));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "distopt ONNX importer test driver\n");
  if (listOps) {
    distopt::printSupportedOnnxOps(llvm::outs());
    return 0;
  }
  if (inputPath.empty()) {
    llvm::errs() << "error: no model given\n";
    return 2;
  }
  distopt::ImportOptions options;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(dimSpec).split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts) {
    auto [name, value] = part.trim().split('=');
    int64_t n = 0;
    if (name.trim().empty() || value.trim().getAsInteger(10, n) || n < 0) {
      llvm::errs() << "error: bad dimension binding '" << part
                   << "': expected name=size\n";
      return 2;
    }
    options.dims[name.trim()] = n;
  }

  for (llvm::StringRef spec : inputValueSpecs) {
    auto [lhs, rhs] = spec.split('=');
    auto [name, shapeText] = lhs.split(':');
    distopt::InputValues v;
    if (lhs.contains(':')) {
      v.shape.emplace();
      llvm::SmallVector<llvm::StringRef> dims;
      shapeText.split(dims, 'x', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef d : dims) {
        int64_t n;
        if (d.getAsInteger(10, n)) {
          llvm::errs() << "error: bad shape in --input-value '" << spec
                       << "'\n";
          return 2;
        }
        v.shape->push_back(n);
      }
    }
    llvm::SmallVector<llvm::StringRef> items;
    rhs.split(items, ',', -1, /*KeepEmpty=*/false);
    v.isFloat = llvm::any_of(items, [](llvm::StringRef x) {
      return x.contains_insensitive('.') || x.contains_insensitive("e") ||
             x.contains_insensitive("inf") || x.contains_insensitive("nan");
    });
    for (llvm::StringRef x : items) {
      int64_t i;
      double f;
      if (v.isFloat ? x.trim().getAsDouble(f) : x.trim().getAsInteger(10, i)) {
        llvm::errs() << "error: bad value '" << x << "' in --input-value '"
                     << spec << "'\n";
        return 2;
      }
      if (v.isFloat)
        v.floats.push_back(f);
      else
        v.ints.push_back(i);
    }
    options.inputValues[name] = std::move(v);
  }

  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  auto start = std::chrono::steady_clock::now();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      distopt::importOnnxModel(context, inputPath, options);
  auto stop = std::chrono::steady_clock::now();
  if (timing)
    llvm::errs() << llvm::format(
        "import took %.2f ms\n",
        std::chrono::duration<double, std::milli>(stop - start).count());
  if (!module)
    return 1;
  mlir::OpPrintingFlags flags;
  if (debugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(llvm::outs(), flags);
  llvm::outs() << "\n";
  return 0;
}
