//===- Mutator.cpp - seeded mutations of user files -------------*- C++ -*-===//
#include "Mutator.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <limits>

using namespace fuzztest;

int64_t Mutator::nastyNumber() {
  static const int64_t values[] = {0,
                                   -1,
                                   1,
                                   2,
                                   3,
                                   7,
                                   -7,
                                   1 << 20,
                                   (int64_t(1) << 31) + 1,
                                   int64_t(1) << 40,
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min()};
  return values[pick(sizeof(values) / sizeof(values[0]))];
}

std::string Mutator::mutateText(const std::string &text) {
  static const char *tokens[] = {">",        "[",
                                 "]",        "{",
                                 "}",        ":",
                                 "\"",       "'",
                                 "\n",       " ",
                                 "-",        ",",
                                 "*",        "?",
                                 "&",        "!",
                                 "|",        "#",
                                 "%",        "@",
                                 "`",        "\t",
                                 "~",        "null",
                                 "{}",       "[]",
                                 ": :",      "? x",
                                 "S(",       "S(1, sizes=[",
                                 "P(sum)",   "R",
                                 ")",        "99999999999999999999",
                                 "-1",       "0",
                                 "1e400",    "<<",
                                 "&a",       "*a",
                                 "!!binary", "---",
                                 "...",      "\\u0000"};
  std::string out = text;
  int edits = 1 + pick(4);
  for (int e = 0; e < edits; ++e) {
    size_t pos = out.empty() ? 0 : pick(out.size() + 1);
    switch (pick(4)) {
    case 0:
      out.insert(pos, tokens[pick(sizeof(tokens) / sizeof(tokens[0]))]);
      break;
    case 1:
      if (!out.empty() && pos < out.size())
        out.erase(pos, 1 + pick(5));
      break;
    case 2:
      if (!out.empty()) {
        size_t from = pick(out.size());
        out.insert(pos, out.substr(from, 1 + pick(20)));
      }
      break;
    default:
      if (!out.empty())
        out[std::min(pos, out.size() - 1)] = static_cast<char>(32 + pick(95));
      break;
    }
  }
  return out;
}

std::string Mutator::mutateBytes(const std::string &bytes) {
  std::string out = bytes;
  int edits = 1 + pick(4);
  for (int e = 0; e < edits && !out.empty(); ++e) {
    size_t pos = pick(out.size());
    switch (pick(4)) {
    case 0:
      out[pos] = static_cast<char>(out[pos] ^ (1 << pick(8)));
      break;
    case 1:
      out.resize(pos);
      break;
    case 2:
      out.insert(pos, out.substr(pick(out.size()), 1 + pick(16)));
      break;
    default:
      out[pos] = static_cast<char>(pick(256));
      break;
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>>
fuzztest::readCorpus(const std::string &dir, const std::string &suffix) {
  std::vector<std::pair<std::string, std::string>> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (!llvm::StringRef(it->path()).ends_with(suffix))
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(it->path(), /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (buffer)
      files.push_back({it->path(), (*buffer)->getBuffer().str()});
  }
  std::sort(files.begin(), files.end());
  return files;
}
