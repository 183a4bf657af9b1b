//===- TokenFile.cpp - next-token batches from a flat token file ----------===//
#include "distopt/Data/DataSource.h"

#include <fstream>

using namespace distopt;
using llvm::Expected;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

/// Reads `count` uint16 tokens from `path` starting at token `first`
/// (wrapping around the file).
static Expected<std::vector<int64_t>> readTokens(StringRef path, int64_t first,
                                                 int64_t count) {
  std::ifstream in(path.str(), std::ios::binary | std::ios::ate);
  if (!in)
    return fail("cannot open token file " + path);
  int64_t tokens = static_cast<int64_t>(in.tellg()) / 2;
  if (tokens < count + 1)
    return fail("token file " + path + " holds " + std::to_string(tokens) +
                " tokens; a batch needs " + std::to_string(count + 1));
  std::vector<int64_t> out(count);
  int64_t start = first % (tokens - count);
  in.seekg(start * 2);
  std::vector<uint16_t> raw(count);
  in.read(reinterpret_cast<char *>(raw.data()), count * 2);
  if (!in)
    return fail("cannot read token file " + path);
  for (int64_t i = 0; i < count; ++i)
    out[i] = raw[i];
  return out;
}

namespace {

class TokenFile : public DataSource {
public:
  explicit TokenFile(std::string path) : path(std::move(path)) {}

  llvm::StringRef kind() const override { return "tokens"; }

  Expected<std::vector<distrt::Tensor>>
  read(int64_t step, llvm::ArrayRef<InputRequest> requests) override {
    std::vector<distrt::Tensor> out;
    for (const InputRequest &r : requests) {
      const distrt::Shape &shape = r.input.shape;
      if (shape.size() != 2 || r.input.dtype != distrt::DType::kI64)
        return fail("--tokens feeds models whose inputs and labels are int64 "
                    "[batch, seq]; '" +
                    r.input.name + "' is " + distrt::DTypeName(r.input.dtype) +
                    distrt::ShapeToString(shape));
      distrt::Tensor t;
      distrt::Status st =
          distrt::Tensor::Allocate(distrt::DType::kI64, shape, &t);
      if (!st.ok())
        return fail(st.ToString());
      for (int64_t b = 0; b < shape[0]; ++b) {
        auto row = readTokens(
            path,
            ((step * r.microbatches + r.microbatch) * shape[0] + b) * shape[1] +
                (r.labels ? 1 : 0),
            shape[1]);
        if (!row)
          return row.takeError();
        std::copy(row->begin(), row->end(), t.data<int64_t>() + b * shape[1]);
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  /// Tokens read: the rows times columns of one microbatch's input, for
  /// every microbatch of every step.
  int64_t positionAfter(int64_t steps,
                        llvm::ArrayRef<InputRequest> requests) const override {
    for (const InputRequest &r : requests)
      if (r.input.shape.size() == 2 && r.input.dtype == distrt::DType::kI64)
        return steps * r.microbatches * distrt::NumElements(r.input.shape);
    return 0;
  }

private:
  std::string path;
};

} // namespace

std::unique_ptr<DataSource> distopt::tokenFile(std::string path) {
  return std::make_unique<TokenFile>(std::move(path));
}
