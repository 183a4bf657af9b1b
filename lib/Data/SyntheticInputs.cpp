//===- SyntheticInputs.cpp - inputs drawn from a seed ---------------------===//
//
// A batch's values are drawn for every input in order from one generator
// seeded with seed + batch, whatever the batch asks for, so that a value
// depends only on the seed, the batch and the list of inputs: dist-run's
// inputs (batch = microbatch), the trainer's random batches (batch = step)
// and runs that resume at a later step see the same numbers. A pipeline's
// microbatches are row slices of one batch drawn whole, so pp trains on the
// rows one device or dp trains on.
//
//===----------------------------------------------------------------------===//
#include "distopt/Data/DataSource.h"

#include "llvm/ADT/Twine.h"

#include <cstring>
#include <map>
#include <random>

using namespace distopt;
using llvm::Expected;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

namespace {

class SyntheticInputs : public DataSource {
public:
  SyntheticInputs(std::vector<InputSpec> inputs, uint64_t seed)
      : inputs(std::move(inputs)), seed(seed) {}

  llvm::StringRef kind() const override { return "random"; }

  Expected<std::vector<distrt::Tensor>>
  read(int64_t batch, llvm::ArrayRef<InputRequest> requests) override {
    // A pipeline's microbatches are row slices of one batch (batchSplit):
    // drawn whole where the first one's input stands, so they are the rows
    // one device's batch holds; the others' inputs take nothing from the
    // stream. (The microbatch inputs of one model input are read together,
    // by the stage that embeds them.)
    std::map<std::string, const InputRequest *> split;
    for (const InputRequest &r : requests)
      if (!r.labels && r.batchSplit > 1)
        split[r.input.name] = &r;
    std::vector<distrt::Tensor> all;
    std::map<std::string, size_t> wholeBatch; // by base: its index in `all`
    if (llvm::any_of(requests,
                     [](const InputRequest &r) { return !r.labels; })) {
      std::mt19937_64 rng(seed + batch);
      for (const InputSpec &input : inputs) {
        InputSpec whole = input;
        if (auto it = split.find(input.name); it != split.end()) {
          if (it->second->microbatch != 0) {
            all.emplace_back();
            continue;
          }
          if (!whole.shape.empty())
            whole.shape[0] *= it->second->batchSplit;
          wholeBatch[it->second->base] = all.size();
        }
        auto t = draw(whole, rng);
        if (!t)
          return t.takeError();
        all.push_back(std::move(*t));
      }
    }
    std::mt19937_64 labelRng(seed * 1000003 + batch);
    std::vector<distrt::Tensor> out;
    for (const InputRequest &r : requests) {
      if (r.labels) {
        auto t = drawLabels(r.input, labelRng);
        if (!t)
          return t.takeError();
        out.push_back(std::move(*t));
        continue;
      }
      if (r.batchSplit > 1) {
        // Microbatch j: rows [j * rows, (j + 1) * rows) of the batch drawn
        // for microbatch 0's input.
        auto it = wholeBatch.find(r.base);
        if (it == wholeBatch.end())
          return fail("no generated input holds microbatch 0 of '" + r.base +
                      "'");
        const distrt::Tensor &whole = all[it->second];
        distrt::Tensor slice;
        distrt::Status st =
            distrt::Tensor::Allocate(r.input.dtype, r.input.shape, &slice);
        if (!st.ok())
          return fail(st.ToString());
        const char *from = static_cast<const char *>(whole.raw());
        std::memcpy(slice.raw(), from + r.microbatch * slice.byte_size(),
                    slice.byte_size());
        out.push_back(std::move(slice));
        continue;
      }
      auto it = llvm::find_if(
          inputs, [&](const InputSpec &i) { return i.name == r.input.name; });
      if (it == inputs.end())
        return fail("no generated input is named '" + r.input.name + "'");
      out.push_back(all[it - inputs.begin()]);
    }
    return out;
  }

private:
  // bf16 and f16 values are f32 draws rounded to nearest even, so a model
  // in a 16-bit dtype sees the same stream an f32 model does, rounded.
  static bool isHalfWidth(distrt::DType dtype) {
    return dtype == distrt::DType::kBF16 || dtype == distrt::DType::kF16;
  }
  static void storeHalfWidth(distrt::Tensor &t, int64_t k, float v) {
    t.data<uint16_t>()[k] = t.dtype() == distrt::DType::kBF16
                                ? distrt::FloatToBF16(v)
                                : distrt::FloatToHalf(v);
  }

  static Expected<distrt::Tensor> draw(const InputSpec &input,
                                       std::mt19937_64 &rng) {
    distrt::DType dtype = input.dtype;
    distrt::Tensor t;
    distrt::Status st = distrt::Tensor::Allocate(dtype, input.shape, &t);
    if (!st.ok())
      return fail(st.ToString());
    int64_t n = t.num_elements();
    if (dtype == distrt::DType::kF32) {
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      for (int64_t k = 0; k < n; ++k)
        t.data<float>()[k] = dist(rng);
    } else if (dtype == distrt::DType::kF64) {
      std::uniform_real_distribution<double> dist(-1.0, 1.0);
      for (int64_t k = 0; k < n; ++k)
        t.data<double>()[k] = dist(rng);
    } else if (isHalfWidth(dtype)) {
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      for (int64_t k = 0; k < n; ++k)
        storeHalfWidth(t, k, dist(rng));
    } else if (dtype == distrt::DType::kI64 || dtype == distrt::DType::kI32) {
      std::uniform_int_distribution<int64_t> dist(0, input.valueBound - 1);
      for (int64_t k = 0; k < n; ++k) {
        if (dtype == distrt::DType::kI64)
          t.data<int64_t>()[k] = dist(rng);
        else
          t.data<int32_t>()[k] = static_cast<int32_t>(dist(rng));
      }
    } else if (dtype == distrt::DType::kBool) {
      for (int64_t k = 0; k < n; ++k)
        t.data<uint8_t>()[k] = rng() & 1;
    } else {
      return fail("cannot generate inputs of dtype " +
                  distrt::DTypeName(dtype) + " for '" + input.name +
                  "'; pass --inputs");
    }
    return t;
  }

  static Expected<distrt::Tensor> drawLabels(const InputSpec &labels,
                                             std::mt19937_64 &rng) {
    distrt::Tensor t;
    distrt::Status st =
        distrt::Tensor::Allocate(labels.dtype, labels.shape, &t);
    if (!st.ok())
      return fail(st.ToString());
    if (t.dtype() == distrt::DType::kI64) {
      std::uniform_int_distribution<int64_t> pick(0, labels.valueBound - 1);
      for (int64_t i = 0; i < t.num_elements(); ++i)
        t.data<int64_t>()[i] = pick(rng);
    } else if (t.dtype() == distrt::DType::kF32) {
      std::uniform_real_distribution<float> pick(-1.f, 1.f);
      for (int64_t i = 0; i < t.num_elements(); ++i)
        t.data<float>()[i] = pick(rng);
    } else if (isHalfWidth(t.dtype())) {
      std::uniform_real_distribution<float> pick(-1.f, 1.f);
      for (int64_t i = 0; i < t.num_elements(); ++i)
        storeHalfWidth(t, i, pick(rng));
    } else {
      return fail("cannot generate labels of dtype " +
                  distrt::DTypeName(t.dtype()) + " for '" + labels.name +
                  "'; pass --data");
    }
    return t;
  }

  std::vector<InputSpec> inputs;
  uint64_t seed;
};

} // namespace

std::unique_ptr<DataSource>
distopt::syntheticInputs(std::vector<InputSpec> inputs, uint64_t seed) {
  return std::make_unique<SyntheticInputs>(std::move(inputs), seed);
}
