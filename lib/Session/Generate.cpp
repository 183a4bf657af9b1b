//===- Generate.cpp - extend a token prompt with a causal LM --------------===//
#include "distopt/Session/Generate.h"
#include "distopt/Session/ProgramInputs.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <random>

using namespace distopt;
using llvm::Expected;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

Expected<std::vector<int64_t>> distopt::parseTokenIds(llvm::StringRef text) {
  std::vector<int64_t> ids;
  std::string spaced = text.str();
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  llvm::SmallVector<llvm::StringRef> words;
  llvm::StringRef(spaced).split(words, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef word : words) {
    int64_t id = 0;
    if (word.getAsInteger(10, id) || id < 0)
      return fail("'" + word +
                  "' in the prompt is not a token id (a non-negative integer)");
    ids.push_back(id);
  }
  return ids;
}

std::vector<int64_t> distopt::tokensOfBytes(llvm::StringRef text) {
  std::vector<int64_t> ids;
  for (unsigned char c : text)
    ids.push_back(c);
  return ids;
}

std::string distopt::bytesOfTokens(llvm::ArrayRef<int64_t> tokens) {
  std::string s;
  for (int64_t t : tokens) {
    if (t >= 0x20 && t < 0x7f && t != '\\') {
      s += static_cast<char>(t);
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(t & 0xff));
    s += t == '\n' ? std::string("\\n") : std::string(hex);
  }
  return s;
}

int64_t distopt::chooseToken(const float *logits, int64_t count,
                             double temperature, int64_t topK, double u) {
  if (temperature <= 0)
    return std::max_element(logits, logits + count) - logits;
  std::vector<int64_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  int64_t keep = topK > 0 ? std::min(topK, count) : count;
  // The K largest, ties to the lower id, so a draw does not depend on the
  // sort's implementation.
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](int64_t a, int64_t b) {
                      return logits[a] > logits[b] ||
                             (logits[a] == logits[b] && a < b);
                    });
  order.resize(keep);
  std::sort(order.begin(), order.end());
  double top = -INFINITY;
  for (int64_t i : order)
    top = std::max(top, static_cast<double>(logits[i]));
  std::vector<double> weight(keep);
  double sum = 0;
  for (int64_t k = 0; k < keep; ++k)
    sum += weight[k] = std::exp((logits[order[k]] - top) / temperature);
  double target = u * sum;
  for (int64_t k = 0; k < keep; ++k) {
    target -= weight[k];
    if (target < 0)
      return order[k];
  }
  return order.back();
}

Expected<Generated> distopt::generate(Session &session,
                                      const Programs &programs,
                                      const std::vector<int64_t> &prompt,
                                      const GenerateOptions &options) {
  std::vector<InputSpec> inputs = programInputs(programs);
  if (inputs.size() != 1 || inputs[0].dtype != distrt::DType::kI64 ||
      inputs[0].shape.size() != 2)
    return fail("--generate feeds causal language models whose only input "
                "is int64 [batch, seq] token ids; this one takes " +
                llvm::Twine(inputs.size()) + " input(s)" +
                (inputs.empty() ? ""
                                : ", the first " +
                                      distrt::DTypeName(inputs[0].dtype) +
                                      distrt::ShapeToString(inputs[0].shape)));
  if (prompt.empty())
    return fail("--generate needs a prompt of at least one token");
  const InputSpec &input = inputs[0];
  const int64_t rows = input.shape[0], window = input.shape[1];
  auto notBytes = [](int64_t vocabulary) {
    return fail("--prompt-text feeds byte-level models (a vocabulary of "
                "256); this one has " +
                llvm::Twine(vocabulary) + " tokens: give ids with --prompt");
  };
  // The ids index an embedding table: its rows are the vocabulary (checked
  // again against the logits after the first run).
  if (options.bytes && input.valueBound > 2 && input.valueBound != 256)
    return notBytes(input.valueBound);
  if (input.valueBound > 2)
    for (size_t i = 0; i < prompt.size(); ++i)
      if (prompt[i] >= input.valueBound)
        return fail("prompt token " + llvm::Twine(prompt[i]) + " (position " +
                    llvm::Twine(i) + ") is outside the model's vocabulary of " +
                    llvm::Twine(input.valueBound));
  Generated out;
  out.tokens = prompt;
  out.window = window;
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int64_t n = 0; n < options.tokens; ++n) {
    // The last `window` tokens, then padding.
    int64_t first = std::max<int64_t>(0, out.tokens.size() - window);
    int64_t filled = out.tokens.size() - first;
    distrt::Tensor ids;
    distrt::Status st =
        distrt::Tensor::Allocate(distrt::DType::kI64, input.shape, &ids);
    if (!st.ok())
      return fail(st.ToString());
    int64_t *p = ids.data<int64_t>();
    std::fill(p, p + rows * window, 0);
    for (int64_t r = 0; r < rows; ++r)
      std::copy(out.tokens.begin() + first, out.tokens.end(), p + r * window);
    auto ran = session.run({{{input.name, std::move(ids)}}});
    if (!ran)
      return ran.takeError();
    // The root reads the logits and chooses; every process gets the token.
    std::vector<distrt::NamedTensor> chosen;
    if (session.isRoot()) {
      const distrt::NamedTensor &logits = ran->front().front();
      const distrt::Shape &shape = logits.tensor.shape();
      if (shape.size() != 3 || shape[0] != rows || shape[1] != window ||
          logits.tensor.dtype() != distrt::DType::kF32)
        return fail("--generate reads [batch, seq, vocab] f32 logits from "
                    "the model's first output; '" +
                    logits.name + "' is " +
                    distrt::DTypeName(logits.tensor.dtype()) +
                    distrt::ShapeToString(shape));
      out.vocabulary = shape[2];
      if (options.bytes && out.vocabulary != 256)
        return notBytes(out.vocabulary);
      if (n == 0)
        for (size_t i = 0; i < prompt.size(); ++i)
          if (prompt[i] < 0 || prompt[i] >= out.vocabulary)
            return fail("prompt token " + llvm::Twine(prompt[i]) +
                        " (position " + llvm::Twine(i) +
                        ") is outside the model's vocabulary of " +
                        llvm::Twine(out.vocabulary));
      const float *row =
          logits.tensor.data<float>() + (filled - 1) * out.vocabulary;
      int64_t next = chooseToken(row, out.vocabulary, options.temperature,
                                 options.topK, uniform(rng));
      distrt::Tensor t;
      st = distrt::Tensor::Allocate(distrt::DType::kI64, {2}, &t);
      if (!st.ok())
        return fail(st.ToString());
      t.data<int64_t>()[0] = next;
      t.data<int64_t>()[1] = out.vocabulary;
      chosen.push_back({"next token", std::move(t)});
    }
    if (llvm::Error e = session.shareFromRoot(chosen))
      return std::move(e);
    out.tokens.push_back(chosen.front().tensor.data<int64_t>()[0]);
    out.vocabulary = chosen.front().tensor.data<int64_t>()[1];
  }
  return out;
}
