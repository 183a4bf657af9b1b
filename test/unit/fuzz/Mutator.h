//===- Mutator.h - seeded mutations of user files ---------------*- C++ -*-===//
//
// The fuzz tests run in ctest: a fixed corpus and a fixed seed, so a crash
// reproduces. Mutations are the edits that break parsers: stray brackets
// and colons, huge and negative numbers, deleted and duplicated spans.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TEST_FUZZ_MUTATOR_H
#define DISTOPT_TEST_FUZZ_MUTATOR_H

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fuzztest {

class Mutator {
public:
  explicit Mutator(uint64_t seed) : rng(seed) {}

  /// `text` with 1 to 4 random edits (insert a token, delete or duplicate a
  /// span, replace a byte).
  std::string mutateText(const std::string &text);

  /// `bytes` with 1 to 4 random byte-level edits (flip, truncate, splice).
  std::string mutateBytes(const std::string &bytes);

  int64_t pick(int64_t n) { return static_cast<int64_t>(rng() % n); }
  /// A number that breaks arithmetic: 0, -1, huge, just past 2^31 ...
  int64_t nastyNumber();

private:
  std::mt19937_64 rng;
};

/// The files in `dir` (sorted by name), read whole.
std::vector<std::pair<std::string, std::string>>
readCorpus(const std::string &dir, const std::string &suffix);

} // namespace fuzztest

#endif // DISTOPT_TEST_FUZZ_MUTATOR_H
