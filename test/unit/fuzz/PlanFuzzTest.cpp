//===- PlanFuzzTest.cpp - malformed plans give errors, not crashes -*- C++
//-*-===//
//
// Mutations of the plan corpus (test/fuzz/plan) go through the parser and,
// when they parse, through the whole compile (apply, propagate, stage cut,
// partition rank 0). Every outcome must be a success or a failure that said
// why; the process must never crash. The seed is fixed: set
// DISTOPT_FUZZ_VERBOSE=1 to print each input while looking for a crash.
//
//===----------------------------------------------------------------------===//
#include "../support/CompilerTestContext.h"
#include "Mutator.h"

#include "distopt/Driver/Compilation.h"
#include "distopt/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace distopt;

namespace {

struct Target {
  std::string model, mesh;
  llvm::StringMap<int64_t> dims;
};

/// The model and mesh a seed plan was written for: the GPT on a 3-D mesh
/// with a pipeline for the seeds that name its layers, the MLP otherwise.
Target targetFor(const std::string &seedPath) {
  std::string data = DISTOPT_TEST_DATA;
  if (llvm::StringRef(seedPath).contains("everything") ||
      llvm::StringRef(seedPath).ends_with(".json")) {
    Target t{data + "/models/gpt4_op17_dyn/model.onnx", "pp=2,dp=2,tp=2", {}};
    t.dims["batch"] = 2;
    t.dims["seq"] = 8;
    return t;
  }
  return {std::string(DISTOPT_LIT_INPUTS) + "/mlp.mlir", "dp=2,tp=2", {}};
}

TEST(PlanFuzz, MutatedPlansFailWithADiagnosticOrCompile) {
  auto corpus = fuzztest::readCorpus(DISTOPT_FUZZ_CORPUS "/plan", "");
  ASSERT_GE(corpus.size(), 3u);
  distopt::testing::CompilerTestContext env("plan-fuzz");
  mlir::MLIRContext &ctx = env.context();
  ctx.printOpOnDiagnostic(false);
  int &errors = env.errors;
  bool verbose = std::getenv("DISTOPT_FUZZ_VERBOSE") != nullptr;
  fuzztest::Mutator mutator(20261124);
  const int perSeed = 2500;
  int parsed = 0, compiled = 0, refused = 0;
  for (const auto &[seedPath, seed] : corpus) {
    Target target = targetFor(seedPath);
    std::string ext = llvm::sys::path::extension(seedPath).str();
    for (int i = 0; i < perSeed; ++i) {
      std::string text = mutator.mutateText(seed);
      std::string path = env.writeScratchFile("plan" + ext, text);
      if (verbose)
        llvm::errs() << "---- " << seedPath << " #" << i << "\n"
                     << text << "\n";
      errors = 0;
      auto plan = parsePlans(&ctx, {path});
      if (failed(plan)) {
        EXPECT_GT(errors, 0) << "a plan failed to parse without a diagnostic:\n"
                             << text;
        ++refused;
        continue;
      }
      ++parsed;
      CompileOptions options;
      options.meshSpec = target.mesh;
      options.dims = target.dims;
      options.plan = std::move(*plan);
      auto compilation = Compilation::compile(ctx, target.model, options);
      if (failed(compilation)) {
        EXPECT_GT(errors, 0) << "a plan failed to apply without a diagnostic:\n"
                             << text;
        ++refused;
        continue;
      }
      if (succeeded((*compilation)->partitionForRank(0)))
        ++compiled;
    }
  }
  // The mutations must reach past the parser, or the test tests little.
  EXPECT_GT(parsed, static_cast<int>(corpus.size()) * perSeed / 10);
  llvm::outs() << "plan fuzz: " << corpus.size() * perSeed << " mutations, "
               << parsed << " parsed, " << compiled << " compiled, " << refused
               << " refused with a diagnostic, 0 crashes\n";
}

} // namespace
