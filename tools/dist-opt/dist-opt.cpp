//===- dist-opt.cpp - distopt's compiler driver -----------------*- C++ -*-===//
#include "distopt/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  distopt::registerAllDialects(registry);
  distopt::registerAllPasses();
  mlir::registerTransformsPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "dist-opt: turn single-device model graphs into per-device programs\n",
      registry));
}
