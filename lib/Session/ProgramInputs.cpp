//===- ProgramInputs.cpp - what the rank programs take --------------------===//
#include "distopt/Session/ProgramInputs.h"

#include "llvm/ADT/StringSet.h"

#include <algorithm>

using namespace distopt;
using llvm::Expected;

/// Upper bound for an integer input: the size of the table it indexes.
static int64_t indexBound(const distrt::Program &program, int inputIndex) {
  const auto &proto = program.proto();
  int32_t value = proto.inputs(inputIndex).value();
  // Follow the value through casts/reshapes to a gather's indices.
  std::vector<int32_t> frontier{value};
  for (int depth = 0; depth < 6 && !frontier.empty(); ++depth) {
    std::vector<int32_t> next;
    for (const auto &inst : proto.instructions()) {
      for (int i = 0; i < inst.inputs_size(); ++i) {
        if (std::find(frontier.begin(), frontier.end(), inst.inputs(i)) ==
            frontier.end())
          continue;
        if (inst.op() == "gather" && i == 1) {
          int axis =
              inst.attrs().count("axis") ? inst.attrs().at("axis").i() : 0;
          int idx = program.ValueIndex(inst.inputs(0));
          if (idx >= 0) {
            const auto &shape = program.value(idx).type.shape;
            // A sharded table: its global extent is what indices range over.
            for (const auto &w : proto.weights())
              if (w.value() == inst.inputs(0) &&
                  w.slice().global_shape_size() > axis)
                return w.slice().global_shape(axis);
            if (axis < static_cast<int>(shape.size()))
              return shape[axis];
          }
        }
        // (A microbatch loop's inputs reach its body through the select.)
        if (inst.op() == "cast" || inst.op() == "reshape" ||
            inst.op() == "identity" ||
            (inst.op() == "microbatch_select" && i > 0))
          for (int32_t out : inst.outputs())
            next.push_back(out);
      }
    }
    frontier = std::move(next);
  }
  return 2;
}

std::vector<InputSpec> distopt::programInputs(const Programs &programs) {
  std::vector<InputSpec> inputs;
  llvm::StringSet<> seen;
  for (const auto &p : programs)
    for (int i = 0; i < p->proto().inputs_size(); ++i) {
      const auto &arg = p->proto().inputs(i);
      if (!seen.insert(arg.name()).second)
        continue;
      InputSpec input;
      input.name = arg.name();
      input.dtype = static_cast<distrt::DType>(arg.dtype());
      input.shape.assign(arg.slice().global_shape().begin(),
                         arg.slice().global_shape().end());
      input.valueBound = indexBound(*p, i);
      inputs.push_back(std::move(input));
    }
  return inputs;
}

Expected<std::vector<distrt::NamedTensor>>
distopt::makeInputs(const Programs &programs, llvm::StringRef dir,
                    uint64_t seed) {
  std::vector<InputSpec> inputs = programInputs(programs);
  std::vector<InputRequest> requests = wholeBatchRequests(inputs);
  std::unique_ptr<DataSource> source =
      dir.empty() ? syntheticInputs(std::move(inputs), seed)
                  : inputFolder(dir.str());
  auto tensors = source->read(0, requests);
  if (!tensors)
    return tensors.takeError();
  std::vector<distrt::NamedTensor> out;
  for (size_t i = 0; i < requests.size(); ++i)
    out.push_back({requests[i].input.name, std::move((*tensors)[i])});
  return out;
}
