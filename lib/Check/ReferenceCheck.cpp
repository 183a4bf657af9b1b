//===- ReferenceCheck.cpp - compare a run with one device -------*- C++ -*-===//
#include "distopt/Check/ReferenceCheck.h"

#include "llvm/Support/Format.h"

using namespace llvm;
using namespace distopt;

Expected<ReferenceCheck> distopt::checkAgainstSingleDevice(
    mlir::MLIRContext &ctx, StringRef modelPath,
    const CompileOptions &distributed,
    const std::vector<std::vector<distrt::NamedTensor>> &inputs,
    const std::vector<std::vector<distrt::NamedTensor>> &outputs,
    const RunSettings &settings, const Tolerances &tolerances) {
  CompileOptions single;
  single.dims = distributed.dims;
  single.workDir = distributed.workDir;
  single.singleDevice = true;
  auto reference = compilePrograms(ctx, modelPath, single);
  if (!reference)
    return createStringError("single-device reference: " +
                             toString(reference.takeError()));
  ReferenceCheck check;
  bool microbatched = inputs.size() > 1;
  for (size_t mb = 0; mb < inputs.size() && mb < outputs.size(); ++mb) {
    auto expected = runLocal(*reference, inputs[mb], settings.threadsPerRank);
    if (!expected)
      return createStringError("single-device reference: " +
                               toString(expected.takeError()));
    const auto &got = outputs[mb];
    if (expected->size() != got.size()) {
      check.passed = false;
      check.lines.push_back("the run produced " + std::to_string(got.size()) +
                            " output(s), one device " +
                            std::to_string(expected->size()));
    }
    for (size_t i = 0; i < got.size() && i < expected->size(); ++i) {
      Comparison c = compareTensors(got[i].tensor, (*expected)[i].tensor,
                                    tolerances.rtol, tolerances.atol);
      std::string line;
      raw_string_ostream os(line);
      os << "check '" << got[i].name << "'"
         << (microbatched ? " microbatch " + std::to_string(mb) : "")
         << ": max abs diff " << format("%.3g", c.maxAbs)
         << (c.ok ? " ok" : " MISMATCH ") << c.message;
      check.lines.push_back(std::move(line));
      check.passed &= c.ok;
      ++check.checked;
    }
  }
  return check;
}
