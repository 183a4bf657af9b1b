//===- Generate.h - extend a token prompt with a causal LM ------*- C++ -*-===//
//
// dist-run --generate: a causal language model's compiled programs, run on
// a session step after step, each step choosing the next token from the
// logits at the last filled position (greedy, or sampled with a
// temperature and top-k), the window sliding once the model's fixed
// sequence length is full. The model takes one int64 [batch, seq] input
// and its first output is [batch, seq, vocab] logits; the prompt fills row
// 0 (and every row, so all rows compute alike), positions after it hold
// token 0, which a causal model never reads for earlier positions.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SESSION_GENERATE_H
#define DISTOPT_SESSION_GENERATE_H

#include "distopt/Session/RankPrograms.h"
#include "distopt/Session/Session.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace distopt {

struct GenerateOptions {
  int64_t tokens = 0;       // how many to add
  double temperature = 0;   // 0: the most likely token
  int64_t topK = 0;         // sample among the K most likely (0: all)
  uint64_t seed = 0;        // of the sampling
  /// The prompt is text (--prompt-text): the model must have a byte-level
  /// vocabulary of 256.
  bool bytes = false;
};

struct Generated {
  std::vector<int64_t> tokens; // the prompt, then the new ones
  int64_t vocabulary = 0;
  int64_t window = 0; // the model's sequence length
};

/// Extends `prompt` by `options.tokens` tokens (collective: every process
/// runs its ranks; all get the same tokens). Errors name what the model
/// or the prompt lacks: another input signature, logits of another shape,
/// a prompt token outside the vocabulary.
llvm::Expected<Generated> generate(Session &session, const Programs &programs,
                                   const std::vector<int64_t> &prompt,
                                   const GenerateOptions &options);

/// Token ids written as "12 7 300" or "12,7,300"; an error names the
/// first word that is not a non-negative integer.
llvm::Expected<std::vector<int64_t>> parseTokenIds(llvm::StringRef text);

/// Bytes as tokens (a byte-level model's vocabulary of 256), and back,
/// with bytes that are not printable ASCII written as \xHH.
std::vector<int64_t> tokensOfBytes(llvm::StringRef text);
std::string bytesOfTokens(llvm::ArrayRef<int64_t> tokens);

/// The next token from one position's logits (`count` values): the first
/// largest with temperature 0, else drawn from softmax(logits /
/// temperature) over the `topK` largest (all when 0), using `u` in [0, 1).
int64_t chooseToken(const float *logits, int64_t count, double temperature,
                    int64_t topK, double u);

} // namespace distopt

#endif // DISTOPT_SESSION_GENERATE_H
