//===- Labels.cpp - check a cross-entropy step's labels -------------------===//
#include "distopt/Trainer/Labels.h"

#include <string>
#include <vector>

using namespace distopt;
using llvm::Error;

static Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

Error distopt::checkLabels(const distrt::Tensor &labels, int64_t classes,
                           int64_t ignoreIndex) {
  if (labels.dtype() != distrt::DType::kI64)
    return fail("labels must be int64 class ids, got " +
                distrt::DTypeName(labels.dtype()));
  const int64_t *p = labels.data<int64_t>();
  for (int64_t i = 0, n = labels.num_elements(); i < n; ++i) {
    if ((p[i] >= 0 && p[i] < classes) || p[i] == ignoreIndex)
      continue;
    // The position as indices, e.g. [1, 5].
    std::string at;
    int64_t rem = i;
    std::vector<int64_t> idx(labels.rank());
    for (int64_t d = labels.rank() - 1; d >= 0; --d) {
      idx[d] = rem % labels.dim(d);
      rem /= labels.dim(d);
    }
    for (size_t d = 0; d < idx.size(); ++d)
      at += (d ? ", " : "") + std::to_string(idx[d]);
    return fail("label " + std::to_string(p[i]) + " at [" + at +
                "] is outside the " + std::to_string(classes) +
                " classes of the output (and is not the ignore index " +
                std::to_string(ignoreIndex) + ")");
  }
  return Error::success();
}
