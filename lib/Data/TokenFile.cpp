//===- TokenFile.cpp - next-token batches from a flat token file ----------===//
#include "distopt/Data/DataSource.h"

#include <fstream>
#include <optional>

using namespace distopt;
using llvm::Expected;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

/// The tokens in `path`: its bytes / 2, an odd byte count being an error
/// (a truncated or non-uint16 file).
static Expected<int64_t> countTokens(StringRef path) {
  std::ifstream in(path.str(), std::ios::binary | std::ios::ate);
  if (!in)
    return fail("cannot open token file " + path);
  int64_t bytes = static_cast<int64_t>(in.tellg());
  if (bytes % 2)
    return fail("token file " + path + " holds " + std::to_string(bytes) +
                " bytes, an odd count; it must hold 2-byte (uint16) tokens");
  return bytes / 2;
}

/// The [B, T] int64 shape every token request has, or an error naming the
/// input that has another.
static llvm::Error checkRequest(const InputRequest &r) {
  const distrt::Shape &shape = r.input.shape;
  if (shape.size() == 2 && r.input.dtype == distrt::DType::kI64)
    return llvm::Error::success();
  return fail("--tokens feeds models whose inputs and labels are int64 "
              "[batch, seq]; '" +
              r.input.name + "' is " + distrt::DTypeName(r.input.dtype) +
              distrt::ShapeToString(shape));
}

/// Reads the `count` uint16 tokens of the window that starts at token
/// `first` modulo N - count (N = `tokens` in `path`), moved `shift` (0 or
/// 1) tokens on: a label row is its input row's window shifted by one,
/// also where the windows wrap around the file.
static Expected<std::vector<int64_t>> readTokens(std::ifstream &in,
                                                 StringRef path, int64_t tokens,
                                                 uint64_t first, int64_t count,
                                                 int shift) {
  if (tokens < count + 1)
    return fail("token file " + path + " holds " + std::to_string(tokens) +
                " tokens; a row needs " + std::to_string(count + 1));
  std::vector<int64_t> out(count);
  int64_t start =
      static_cast<int64_t>(first % static_cast<uint64_t>(tokens - count)) +
      shift;
  in.clear();
  in.seekg(start * 2);
  std::vector<uint16_t> raw(count);
  in.read(reinterpret_cast<char *>(raw.data()), count * 2);
  if (!in)
    return fail("cannot read token file " + path);
  for (int64_t i = 0; i < count; ++i)
    out[i] = raw[i];
  return out;
}

/// A well-mixed 64-bit function of (seed, row): splitmix64's finaliser.
static uint64_t mix(uint64_t seed, uint64_t row) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (row + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

class TokenFile : public DataSource {
public:
  TokenFile(std::string path, std::optional<uint64_t> shuffleSeed)
      : path(std::move(path)), shuffleSeed(shuffleSeed),
        name(shuffleSeed ? "tokens shuffled with seed " +
                               std::to_string(*shuffleSeed)
                         : "tokens") {}

  llvm::StringRef kind() const override { return name; }

  Expected<std::vector<distrt::Tensor>>
  read(int64_t step, llvm::ArrayRef<InputRequest> requests) override {
    auto tokens = countTokens(path);
    if (!tokens)
      return tokens.takeError();
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return fail("cannot open token file " + path);
    std::vector<distrt::Tensor> out;
    for (const InputRequest &r : requests) {
      const distrt::Shape &shape = r.input.shape;
      if (llvm::Error e = checkRequest(r))
        return std::move(e);
      distrt::Tensor t;
      distrt::Status st =
          distrt::Tensor::Allocate(distrt::DType::kI64, shape, &t);
      if (!st.ok())
        return fail(st.ToString());
      for (int64_t b = 0; b < shape[0]; ++b) {
        // The batch's rows in the file's order, or (shuffled) windows
        // drawn from the seed and the row's number in the whole run: the
        // same batches on every mesh and after a resume.
        uint64_t index = (step * r.microbatches + r.microbatch) * shape[0] + b;
        uint64_t first = shuffleSeed ? mix(*shuffleSeed, index)
                                     : index * static_cast<uint64_t>(shape[1]);
        auto row = readTokens(in, path, *tokens, first, shape[1],
                              r.labels ? 1 : 0);
        if (!row)
          return row.takeError();
        std::copy(row->begin(), row->end(), t.data<int64_t>() + b * shape[1]);
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  /// One step's windows must lie in the file without wrapping: a file
  /// shorter than that would repeat its tokens inside a batch.
  llvm::Error check(llvm::ArrayRef<InputRequest> requests) const override {
    auto tokens = countTokens(path);
    if (!tokens)
      return tokens.takeError();
    for (const InputRequest &r : requests) {
      if (llvm::Error e = checkRequest(r))
        return e;
      const distrt::Shape &shape = r.input.shape;
      int64_t step = r.microbatches * shape[0] * shape[1] + 1;
      if (*tokens < step)
        return fail(
            "token file " + path + " holds " + std::to_string(*tokens) +
            " tokens; one step reads " + std::to_string(step) + " (" +
            (r.microbatches > 1 ? std::to_string(r.microbatches) +
                                      " microbatches of "
                                : std::string()) +
            std::to_string(shape[0]) + " rows of " + std::to_string(shape[1]) +
            " tokens, and the last row's next token)");
    }
    return llvm::Error::success();
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
  std::optional<uint64_t> shuffleSeed;
  std::string name;
};

} // namespace

std::unique_ptr<DataSource>
distopt::tokenFile(std::string path, std::optional<uint64_t> shuffleSeed) {
  return std::make_unique<TokenFile>(std::move(path), shuffleSeed);
}
