//===- ProgramInputs.cpp - what the rank programs take --------------------===//
#include "distopt/Session/ProgramInputs.h"

#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

using namespace distopt;
using llvm::Expected;

namespace {
/// Who reads each value of a program: (instruction, operand position) pairs,
/// built once so that finding every input's bound is linear in the program
/// (a step with 1024 microbatches has 2048 inputs).
struct ValueReaders {
  explicit ValueReaders(const distrt::proto::RankProgram &proto) {
    for (int k = 0; k < proto.instructions_size(); ++k) {
      const auto &inst = proto.instructions(k);
      for (int i = 0; i < inst.inputs_size(); ++i)
        readers[inst.inputs(i)].push_back({k, i});
    }
  }
  const std::vector<std::pair<int, int>> &of(int32_t value) const {
    static const std::vector<std::pair<int, int>> none;
    auto it = readers.find(value);
    return it == readers.end() ? none : it->second;
  }
  std::unordered_map<int32_t, std::vector<std::pair<int, int>>> readers;
};
} // namespace

/// Upper bound for an integer input: the size of the table it indexes
/// (a gather's), of the dimension it picks from (gather_elements,
/// scatter_elements), of the smallest dimension index tuples pick from
/// (gather_nd, scatter_nd), or a one_hot's depth.
static int64_t indexBound(const distrt::Program &program,
                          const ValueReaders &readers, int inputIndex) {
  const auto &proto = program.proto();
  // Follow the value through casts/reshapes to a gather's indices.
  std::vector<int32_t> frontier{proto.inputs(inputIndex).value()};
  for (int depth = 0; depth < 6 && !frontier.empty(); ++depth) {
    std::vector<int32_t> next;
    for (int32_t value : frontier)
      for (auto [k, i] : readers.of(value)) {
        const auto &inst = proto.instructions(k);
        if ((inst.op() == "gather_elements" ||
             inst.op() == "scatter_elements") &&
            i == 1) {
          // data's axis is whole on every rank (the op's sharding rule).
          int axis =
              inst.attrs().count("axis") ? inst.attrs().at("axis").i() : 0;
          int idx = program.ValueIndex(inst.inputs(0));
          if (idx >= 0 &&
              axis < static_cast<int>(program.value(idx).type.shape.size()))
            return program.value(idx).type.shape[axis];
        }
        if ((inst.op() == "gather_nd" || inst.op() == "scatter_nd") &&
            i == 1) {
          // Each tuple entry indexes one of data's dimensions from
          // batch_dims on: the smallest of them bounds every entry.
          int b = inst.attrs().count("batch_dims")
                      ? inst.attrs().at("batch_dims").i()
                      : 0;
          int di = program.ValueIndex(inst.inputs(0));
          int ii = program.ValueIndex(inst.inputs(1));
          if (di >= 0 && ii >= 0 &&
              !program.value(ii).type.shape.empty()) {
            const auto &data = program.value(di).type.shape;
            int64_t k = program.value(ii).type.shape.back();
            int64_t bound = -1;
            for (int64_t d = b; d < b + k && d < int64_t(data.size()); ++d)
              bound = bound < 0 ? data[d] : std::min(bound, data[d]);
            if (bound > 0)
              return bound;
          }
        }
        if (inst.op() == "one_hot" && i == 0 && inst.attrs().count("depth"))
          return inst.attrs().at("depth").i();
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
    frontier = std::move(next);
  }
  return 2;
}

std::vector<InputSpec> distopt::programInputs(const Programs &programs) {
  std::vector<InputSpec> inputs;
  llvm::StringSet<> seen;
  for (const auto &p : programs) {
    const ValueReaders readers(p->proto());
    for (int i = 0; i < p->proto().inputs_size(); ++i) {
      const auto &arg = p->proto().inputs(i);
      if (!seen.insert(arg.name()).second)
        continue;
      InputSpec input;
      input.name = arg.name();
      input.dtype = static_cast<distrt::DType>(arg.dtype());
      input.shape.assign(arg.slice().global_shape().begin(),
                         arg.slice().global_shape().end());
      input.valueBound = indexBound(*p, readers, i);
      inputs.push_back(std::move(input));
    }
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
