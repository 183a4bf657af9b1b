//===- DistoptPlugin.cpp - distopt as an mlir-opt plugin --------*- C++ -*-===//
//
// Loaded by upstream mlir-opt:
//   mlir-opt --load-dialect-plugin=libDistoptPlugin.so \
//            --load-pass-plugin=libDistoptPlugin.so \
//            --pass-pipeline='builtin.module(dist-pipeline)' in.mlir
// The dialect entry point adds the dist and nn dialects and the external
// sharding rules of linalg/tosa/arith/math/tensor ops to mlir-opt's registry;
// the pass entry point registers every distopt pass and `dist-pipeline`.
// The library links the same shared libMLIR/libLLVM as mlir-opt, so both see
// one copy of MLIR's registries.
//
//===----------------------------------------------------------------------===//
#include "distopt/InitAll.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

static void registerDialects(mlir::DialectRegistry *registry) {
  distopt::registerAllDialects(*registry);
}

static void registerPasses() { distopt::registerAllPasses(); }

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DistoptPlugin", LLVM_VERSION_STRING,
          registerDialects};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DistoptPlugin", LLVM_VERSION_STRING,
          registerPasses};
}
