//===- MachineProfileFuzzTest.cpp - malformed machine profiles ------------===//
//
// Mutations of the machine-profile corpus (test/fuzz/machine) go through the
// profile parser. Every outcome must be a profile the cost model can use
// (finite, non-negative times on a few meshes; written out, it reads back)
// or an error that names the file and line ("fuzz.json:LINE: ..."); the
// process must never crash. The seed
// is fixed: set DISTOPT_FUZZ_VERBOSE=1 to print each input.
//
//===----------------------------------------------------------------------===//
#include "Mutator.h"

#include "distopt/CostModel/CostModel.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

using namespace distopt::cost;

namespace {

/// Times on meshes that use the profile's intra-node, inter-node and named
/// links, for every dtype and class: all must be usable numbers.
void checkUsable(const MachineProfile &profile, const std::string &text) {
  auto machine = std::make_shared<const MachineProfile>(profile);
  for (auto [names, sizes] :
       {std::pair<std::vector<std::string>, std::vector<int64_t>>{{"dp", "tp"},
                                                                  {4, 8}},
        {{"pp", "dp", "tp"}, {2, 2, 2}},
        {{"x"}, {3}}}) {
    MeshCost mesh(machine, names, sizes);
    for (int64_t a = 0; a < mesh.numAxes(); ++a) {
      double us = mesh.collectiveUs(Collective::AllReduce, 1e6, {a});
      ASSERT_TRUE(std::isfinite(us) && us >= 0) << text;
    }
    std::vector<int64_t> all;
    for (int64_t a = 0; a < mesh.numAxes(); ++a)
      all.push_back(a);
    double us = mesh.collectiveUs(Collective::AllGather, 1e6, all);
    ASSERT_TRUE(std::isfinite(us) && us >= 0) << text;
  }
  for (const auto &[dtype, rates] : profile.gemmTflops)
    for (GemmClass c : {GemmClass::Small, GemmClass::Medium, GemmClass::Large}) {
      OpWork w;
      w.flops = 1e9;
      w.bytes = 1e6;
      w.gemm = true;
      w.dtype = dtype;
      w.gemmClass = c;
      double us = computeUs(profile, w);
      ASSERT_TRUE(std::isfinite(us) && us >= 0) << text;
    }
}

TEST(MachineProfileFuzz, MutatedProfilesParseOrSayWhatIsWrong) {
  auto corpus = fuzztest::readCorpus(DISTOPT_FUZZ_CORPUS "/machine", ".json");
  ASSERT_GE(corpus.size(), 3u);
  bool verbose = std::getenv("DISTOPT_FUZZ_VERBOSE") != nullptr;
  fuzztest::Mutator mutator(20261125);
  const int perSeed = 4000;
  int parsed = 0, refused = 0, refusedPastSyntax = 0;
  for (const auto &[seedPath, seed] : corpus) {
    // The seeds themselves are valid.
    auto original = parseMachineProfile(seed, seedPath);
    ASSERT_TRUE(static_cast<bool>(original))
        << llvm::toString(original.takeError());
    for (int i = 0; i < perSeed; ++i) {
      std::string text = mutator.mutateText(seed);
      if (verbose)
        llvm::errs() << "---- " << seedPath << " #" << i << "\n"
                     << text << "\n";
      auto profile = parseMachineProfile(text, "fuzz.json");
      if (!profile) {
        std::string message = llvm::toString(profile.takeError());
        // "fuzz.json:LINE: what" (malformed JSON: "fuzz.json:LINE:COL: ...")
        // with LINE within the text.
        llvm::StringRef rest(message);
        unsigned line = 0;
        bool named = rest.consume_front("fuzz.json:") &&
                     !rest.consumeInteger(10, line) && line >= 1 &&
                     line <= 1 + llvm::count(text, '\n') &&
                     rest.consume_front(":");
        EXPECT_TRUE(named) << "an error that does not name file:line: "
                           << message << "\n"
                           << text;
        EXPECT_GT(rest.trim().size(), 0u) << message;
        ++refused;
        if (message.find("malformed JSON") == std::string::npos)
          ++refusedPastSyntax;
        continue;
      }
      ++parsed;
      checkUsable(*profile, text);
      std::string written;
      llvm::raw_string_ostream os(written);
      writeMachineProfile(*profile, os);
      auto again = parseMachineProfile(written, "again.json");
      EXPECT_TRUE(static_cast<bool>(again))
          << (again ? "" : llvm::toString(again.takeError())) << "\n"
          << written;
    }
  }
  // The mutations must reach past the JSON syntax into the profile's own
  // checks (and some must still parse), or the test tests little.
  int total = static_cast<int>(corpus.size()) * perSeed;
  EXPECT_GT(parsed + refusedPastSyntax, total / 10);
  EXPECT_GT(parsed, 0);
  EXPECT_GT(refusedPastSyntax, 0);
  llvm::outs() << "machine-profile fuzz: " << total << " mutations, "
               << parsed << " parsed, " << refused
               << " refused with an error naming file:line ("
               << refusedPastSyntax << " past the JSON syntax), 0 crashes\n";
}

} // namespace
