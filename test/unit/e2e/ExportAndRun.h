//===- ExportAndRun.h - a module's rank program, run on the host -*- C++ -*-===//
//
// For the export tests: parse a module, run dist-fuse-for-target for a
// target, export rank 0's program, note what it holds (its instructions,
// a matmul's flags, its constants) and run it on the host executor.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TEST_UNIT_E2E_EXPORTANDRUN_H
#define DISTOPT_TEST_UNIT_E2E_EXPORTANDRUN_H

#include "distopt/Export/RankProgramExport.h"
#include "distopt/Fusion/Passes.h"
#include "distopt/InitAll.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "distrt/distrt.h"

#include <gtest/gtest.h>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace distopt::testing {

struct Exported {
  std::vector<std::string> ops;
  std::map<std::string, int64_t> matmulFlags;
  std::string epilogue;
  int matmulInputs = 0;
  /// The bytes the program stores for its constants.
  size_t constantBytes = 0;
  std::vector<distrt::Tensor> outputs;
};

inline distrt::Tensor randomMatrix(const distrt::Shape &shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape[0] * shape[1]));
  for (float &x : v)
    x = u(gen);
  return *distrt::Tensor::FromVector<float>(shape, v);
}

inline Exported exportAndRun(const std::string &text,
                             const std::vector<distrt::Tensor> &inputs,
                             int threads = 1,
                             const std::string &target = "cpu") {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  EXPECT_TRUE(module);
  Exported e;
  if (!module)
    return e;
  mlir::PassManager pm(&ctx);
  pm.addPass(createDistFuseForTarget({target}));
  EXPECT_TRUE(succeeded(pm.run(*module)));
  auto proto = exportRankProgram(*module, 0, ExportOptions());
  EXPECT_TRUE(succeeded(proto));
  if (failed(proto))
    return e;
  for (const auto &inst : proto->instructions()) {
    e.ops.push_back(inst.op());
    if (inst.op() == "matmul") {
      for (const auto &[name, a] : inst.attrs())
        e.matmulFlags[name] = a.i();
      if (inst.attrs().count("epilogue"))
        e.epilogue = inst.attrs().at("epilogue").s();
      e.matmulInputs = inst.inputs_size();
    }
  }
  for (const auto &c : proto->constants())
    e.constantBytes += c.tensor().data().size();
  std::shared_ptr<const distrt::Program> program;
  distrt::Status st =
      distrt::Program::Create(*proto, "<memory>", "", &program);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<distrt::Executor> exec;
  distrt::ExecutorOptions options;
  options.threads = threads;
  st = distrt::Executor::Create(program, nullptr, options, &exec);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!exec)
    return e;
  st = exec->Run(inputs, &e.outputs);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

} // namespace distopt::testing

#endif // DISTOPT_TEST_UNIT_E2E_EXPORTANDRUN_H
