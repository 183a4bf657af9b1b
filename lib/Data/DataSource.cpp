//===- DataSource.cpp - where a run's input tensors come from -------------===//
#include "distopt/Data/DataSource.h"

using namespace distopt;

std::vector<InputRequest>
distopt::wholeBatchRequests(llvm::ArrayRef<InputSpec> inputs) {
  std::vector<InputRequest> out;
  for (const InputSpec &input : inputs) {
    InputRequest r;
    r.input = input;
    r.base = input.name;
    r.index = static_cast<int>(out.size());
    out.push_back(std::move(r));
  }
  return out;
}

DataSource::~DataSource() = default;
