//===- Microbatches.cpp - split a batch into microbatches and back --------===//
#include "distopt/Data/Microbatches.h"

#include "llvm/ADT/Twine.h"

#include <cstring>

using namespace distopt;
using llvm::Expected;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

Expected<std::vector<std::vector<distrt::NamedTensor>>>
distopt::splitBatch(const std::vector<distrt::NamedTensor> &tensors,
                    int64_t parts) {
  std::vector<std::vector<distrt::NamedTensor>> out(parts);
  for (const distrt::NamedTensor &t : tensors) {
    if (t.tensor.rank() == 0 || t.tensor.dim(0) % parts != 0)
      return fail("input '" + t.name + "' has " +
                  llvm::Twine(t.tensor.rank() ? t.tensor.dim(0) : 0) +
                  " rows, which do not split into " + llvm::Twine(parts) +
                  " microbatches");
    distrt::Shape shape = t.tensor.shape();
    shape[0] /= parts;
    size_t bytes = t.tensor.byte_size() / parts;
    for (int64_t i = 0; i < parts; ++i) {
      distrt::Tensor piece;
      distrt::Status st = distrt::Tensor::FromBytes(
          t.tensor.dtype(), shape,
          static_cast<const uint8_t *>(t.tensor.raw()) + i * bytes, bytes,
          &piece);
      if (!st.ok())
        return fail(st.ToString());
      out[i].push_back({t.name, std::move(piece)});
    }
  }
  return out;
}

Expected<std::vector<distrt::NamedTensor>> distopt::concatBatch(
    const std::vector<std::vector<distrt::NamedTensor>> &parts) {
  std::vector<distrt::NamedTensor> out;
  if (parts.empty())
    return out;
  if (parts.size() == 1)
    return parts[0]; // nothing to join (scalars included)
  for (size_t i = 0; i < parts[0].size(); ++i) {
    const distrt::Tensor &first = parts[0][i].tensor;
    distrt::Shape shape = first.shape();
    if (shape.empty())
      return fail("output '" + parts[0][i].name +
                  "' is a scalar per microbatch");
    shape[0] *= parts.size();
    distrt::Tensor whole;
    distrt::Status st = distrt::Tensor::Allocate(first.dtype(), shape, &whole);
    if (!st.ok())
      return fail(st.ToString());
    size_t bytes = first.byte_size();
    for (size_t p = 0; p < parts.size(); ++p)
      std::memcpy(static_cast<uint8_t *>(whole.raw()) + p * bytes,
                  parts[p][i].tensor.raw(), bytes);
    out.push_back({parts[0][i].name, std::move(whole)});
  }
  return out;
}
