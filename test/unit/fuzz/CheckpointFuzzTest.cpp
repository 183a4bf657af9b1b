//===- CheckpointFuzzTest.cpp - malformed checkpoint files: errors --------===//
//
// Mutations of a checkpoint's index.json and of a safetensors header
// (test/fuzz/checkpoint, saved by dist-train from the mlp_regressor case)
// go through their parsers. Half the mutations are text edits, half swap a
// number for one that breaks arithmetic (negative, huge, past 2^63), which
// is what reaches the range and coverage checks. Every outcome must be a
// parse or an error that names the file; nothing may crash. The seed is
// fixed: DISTOPT_FUZZ_VERBOSE=1 prints each input.
//
//===----------------------------------------------------------------------===//
#include "Mutator.h"

#include "distopt/Checkpoint/CheckpointFormat.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>

using namespace distopt::checkpoint;

namespace {

/// `text` with one run of digits replaced by a nasty number.
std::string mutateNumber(fuzztest::Mutator &m, const std::string &text) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < text.size(); ++i)
    if (std::isdigit(static_cast<unsigned char>(text[i])) &&
        (i == 0 || !std::isdigit(static_cast<unsigned char>(text[i - 1]))))
      starts.push_back(i);
  if (starts.empty())
    return text;
  size_t at = starts[m.pick(starts.size())], end = at;
  while (end < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[end])))
    ++end;
  std::string n =
      m.pick(8) == 0 ? "18446744073709551617" : std::to_string(m.nastyNumber());
  return text.substr(0, at) + n + text.substr(end);
}

TEST(CheckpointFuzz, MutatedIndexAndHeadersParseOrFailWithAMessage) {
  auto corpus = fuzztest::readCorpus(DISTOPT_FUZZ_CORPUS "/checkpoint", "");
  ASSERT_EQ(corpus.size(), 2u);
  bool verbose = std::getenv("DISTOPT_FUZZ_VERBOSE") != nullptr;
  fuzztest::Mutator mutator(20261124);
  const int perSeed = 6000;
  int parsed = 0, refused = 0;
  for (const auto &[path, seed] : corpus) {
    bool isIndex = llvm::StringRef(path).ends_with("index.json");
    // The header's data section: as large as its last tensor's end.
    uint64_t dataBytes = 0;
    if (!isIndex) {
      auto entries = parseSafetensorsHeader(seed, ~uint64_t(0), path);
      ASSERT_TRUE(static_cast<bool>(entries)) << toString(entries.takeError());
      for (const SafetensorsEntry &e : *entries)
        dataBytes = std::max(dataBytes, e.end);
    } else {
      auto index = parseIndex(seed, path);
      ASSERT_TRUE(static_cast<bool>(index)) << toString(index.takeError());
    }
    for (int i = 0; i < perSeed; ++i) {
      std::string text =
          i % 2 ? mutator.mutateText(seed) : mutateNumber(mutator, seed);
      if (verbose)
        llvm::errs() << "---- " << path << " #" << i << "\n" << text << "\n";
      std::string message;
      if (isIndex) {
        auto index = parseIndex(text, "fuzzed/index.json");
        if (index) {
          ++parsed;
          // What parsed keeps its promises: pieces inside their tensors
          // and files.
          for (const TensorEntry &t : index->tensors)
            for (const Piece &p : t.pieces)
              for (size_t d = 0; d < t.shape.size(); ++d)
                ASSERT_LE(p.offsets[d] + p.shape[d], t.shape[d]) << text;
          continue;
        }
        message = toString(index.takeError());
        EXPECT_TRUE(llvm::StringRef(message).starts_with("fuzzed/index.json"))
            << message;
      } else {
        auto entries = parseSafetensorsHeader(text, dataBytes, "fuzzed.st");
        if (entries) {
          ++parsed;
          for (const SafetensorsEntry &e : *entries)
            ASSERT_LE(e.end, dataBytes) << text;
          continue;
        }
        message = toString(entries.takeError());
        EXPECT_TRUE(llvm::StringRef(message).starts_with("fuzzed.st"))
            << message;
      }
      EXPECT_GT(message.size(), 20u) << text;
      ++refused;
    }
  }
  // Mutations that keep the JSON valid must reach the checks beyond it.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, static_cast<int>(corpus.size()) * perSeed / 4);
  llvm::outs() << "checkpoint fuzz: " << corpus.size() * perSeed
               << " mutations, " << parsed << " parsed, " << refused
               << " refused with a message, 0 crashes\n";
}

} // namespace
