//===- TrainConfigFuzzTest.cpp - malformed training configs: errors -------===//
//
// Mutations of the training-config corpus (test/fuzz/train, JSON and YAML,
// written for the gpt_adamw training case) go through the config parser
// and, for every third that parses, through building the training step on
// the case's model. Every outcome must be a success or a failure that said
// why; the process must never crash. The seed is fixed: set
// DISTOPT_FUZZ_VERBOSE=1 to print each input while looking for a crash.
//
//===----------------------------------------------------------------------===//
#include "../support/CompilerTestContext.h"
#include "Mutator.h"

#include "distopt/Driver/Compilation.h"
#include "distopt/InitAll.h"
#include "distopt/Training/TrainConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace distopt;

namespace {

TEST(TrainConfigFuzz, MutatedConfigsFailWithADiagnosticOrBuild) {
  auto corpus = fuzztest::readCorpus(DISTOPT_FUZZ_CORPUS "/train", "");
  ASSERT_GE(corpus.size(), 3u);
  const std::string model =
      std::string(DISTOPT_TEST_DATA) + "/train/gpt_adamw/model.onnx";
  distopt::testing::CompilerTestContext env("train-fuzz");
  mlir::MLIRContext &ctx = env.context();
  ctx.printOpOnDiagnostic(false);
  int &errors = env.errors;
  bool verbose = std::getenv("DISTOPT_FUZZ_VERBOSE") != nullptr;
  fuzztest::Mutator mutator(20261124);
  const int perSeed = 4000;
  int parsed = 0, built = 0, refused = 0;
  for (const auto &[seedPath, seed] : corpus) {
    std::string ext = llvm::sys::path::extension(seedPath).str();
    for (int i = 0; i < perSeed; ++i) {
      std::string text = mutator.mutateText(seed);
      std::string path = env.writeScratchFile("train" + ext, text);
      if (verbose)
        llvm::errs() << "---- " << seedPath << " #" << i << "\n"
                     << text << "\n";
      errors = 0;
      auto config = parseTrainConfig(&ctx, path);
      if (failed(config)) {
        EXPECT_GT(errors, 0)
            << "a config failed to parse without a diagnostic:\n"
            << text;
        ++refused;
        continue;
      }
      if (parsed++ % 3 != 0)
        continue;
      CompileOptions options;
      options.singleDevice = true;
      options.train = std::move(*config);
      auto compilation = Compilation::compile(ctx, model, options);
      if (failed(compilation)) {
        EXPECT_GT(errors, 0)
            << "a config failed to build without a diagnostic:\n"
            << text;
        ++refused;
        continue;
      }
      ++built;
    }
  }
  // The mutations must reach past the parser, or the test tests little.
  EXPECT_GT(parsed, static_cast<int>(corpus.size()) * perSeed / 20);
  EXPECT_GT(built, 0);
  llvm::outs() << "training-config fuzz: " << corpus.size() * perSeed
               << " mutations, " << parsed << " parsed, " << built
               << " steps built (of every third parsed), " << refused
               << " refused with a diagnostic, 0 crashes\n";
}

} // namespace
