//===- Runner.cpp - compile a model for a mesh, run it, check it -*- C++ -*-===//
#include "distopt/Runner/Runner.h"
#include "distopt/Export/RankProgramExport.h"
#include "distopt/Pipeline/SyntheticWeights.h"

#include "nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace distopt;
using llvm::Expected;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

Expected<Programs> distopt::compilePrograms(MLIRContext &ctx,
                                            StringRef modelPath,
                                            const CompileOptions &options,
                                            StringRef workDir) {
  OwningOpRef<ModuleOp> module = loadModel(ctx, modelPath, options);
  if (!module)
    return fail("cannot load " + modelPath);
  if (options.singleDevice)
    stripDistribution(*module);
  if ((!options.singleDevice && (failed(setMesh(*module, options.meshSpec)) ||
                                 failed(applyPlans(*module, options.plans)))) ||
      failed(materializeSyntheticWeights(*module, workDir)))
    return fail("cannot prepare " + modelPath);
  std::string weightDir = weightDirectory(*module, modelPath);
  int64_t n = numDevices(*module);
  bool distributed = !module->getOps<dist::MeshOp>().empty();
  if (distributed && failed(shardModule(*module)))
    return fail("cannot shard " + modelPath);
  Programs programs;
  ExportOptions exportOptions;
  exportOptions.weightDir = weightDir;
  for (int64_t rank = 0; rank < n; ++rank) {
    OwningOpRef<ModuleOp> local;
    ModuleOp toExport = *module;
    if (distributed) {
      local = partitionForRank(*module, rank);
      if (!local)
        return fail("cannot partition " + modelPath + " for rank " +
                    llvm::Twine(rank));
      toExport = *local;
    }
    FailureOr<distrt::proto::RankProgram> proto =
        exportRankProgram(toExport, rank, exportOptions);
    if (failed(proto))
      return fail("cannot export rank " + llvm::Twine(rank));
    std::shared_ptr<const distrt::Program> program;
    distrt::Status st = distrt::Program::Create(
        std::move(*proto), "rank " + std::to_string(rank) + " of " + modelPath.str(),
        weightDir, &program);
    if (!st.ok())
      return fail("rank " + llvm::Twine(rank) + ": " + st.ToString());
    programs.push_back(std::move(program));
  }
  return programs;
}

Expected<distrt::HostTensor> distopt::readTensorProto(StringRef path);

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
          int axis = inst.attrs().count("axis") ? inst.attrs().at("axis").i() : 0;
          int idx = program.ValueIndex(inst.inputs(0));
          if (idx >= 0) {
            const auto &shape = program.value(idx).type.shape;
            // A sharded table: its global extent is what indices range over.
            for (const auto &w : proto.weights())
              if (w.value() == inst.inputs(0) && w.slice().global_shape_size() > axis)
                return w.slice().global_shape(axis);
            if (axis < static_cast<int>(shape.size()))
              return shape[axis];
          }
        }
        if (inst.op() == "cast" || inst.op() == "reshape" ||
            inst.op() == "identity")
          for (int32_t out : inst.outputs())
            next.push_back(out);
      }
    }
    frontier = std::move(next);
  }
  return 2;
}

Expected<std::vector<distrt::NamedTensor>>
distopt::makeInputs(const distrt::Program &program, StringRef dir,
                    uint64_t seed) {
  std::vector<distrt::NamedTensor> inputs;
  const auto &proto = program.proto();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < proto.inputs_size(); ++i) {
    const auto &arg = proto.inputs(i);
    distrt::NamedTensor named;
    named.name = arg.name();
    if (!dir.empty()) {
      SmallString<256> path(dir);
      llvm::sys::path::append(path, "input_" + std::to_string(i) + ".pb");
      auto t = readTensorProto(path);
      if (!t)
        return t.takeError();
      named.tensor = std::move(*t);
      inputs.push_back(std::move(named));
      continue;
    }
    distrt::Shape shape(arg.slice().global_shape().begin(),
                        arg.slice().global_shape().end());
    auto dtype = static_cast<distrt::DType>(arg.dtype());
    distrt::HostTensor t;
    distrt::Status st = distrt::HostTensor::Allocate(dtype, shape, &t);
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
    } else if (dtype == distrt::DType::kI64 || dtype == distrt::DType::kI32) {
      std::uniform_int_distribution<int64_t> dist(0, indexBound(program, i) - 1);
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
                  distrt::DTypeName(dtype) + " for '" + arg.name() +
                  "'; pass --inputs");
    }
    named.tensor = std::move(t);
    inputs.push_back(std::move(named));
  }
  return inputs;
}

Expected<std::vector<distrt::NamedTensor>>
distopt::runLocal(const Programs &programs,
                  const std::vector<distrt::NamedTensor> &inputs,
                  int threadsPerRank) {
  std::vector<std::vector<distrt::HostTensor>> perRank, outputs;
  distrt::Status st = distrt::ScatterInputs(programs, inputs, &perRank);
  if (!st.ok())
    return fail(st.ToString());
  distrt::LocalRunOptions options;
  options.threads_per_rank = threadsPerRank;
  st = distrt::RunLocal(programs, perRank, &outputs, options);
  if (!st.ok())
    return fail(st.ToString());
  std::vector<distrt::NamedTensor> global;
  st = distrt::AssembleOutputs(programs, outputs, &global);
  if (!st.ok())
    return fail(st.ToString());
  return global;
}

static bool readAsDouble(const distrt::HostTensor &t, int64_t i, double &out) {
  switch (t.dtype()) {
  case distrt::DType::kF32:
    out = t.data<float>()[i];
    return true;
  case distrt::DType::kF64:
    out = t.data<double>()[i];
    return true;
  case distrt::DType::kI64:
    out = static_cast<double>(t.data<int64_t>()[i]);
    return true;
  case distrt::DType::kI32:
    out = t.data<int32_t>()[i];
    return true;
  case distrt::DType::kBool:
  case distrt::DType::kU8:
    out = t.data<uint8_t>()[i];
    return true;
  case distrt::DType::kI8:
    out = t.data<int8_t>()[i];
    return true;
  default:
    return false;
  }
}

Comparison distopt::compareTensors(const distrt::HostTensor &actual,
                                   const distrt::HostTensor &expected,
                                   double rtol, double atol) {
  Comparison c;
  if (actual.shape() != expected.shape()) {
    c.ok = false;
    c.message = "shape " + distrt::ShapeToString(actual.shape()) +
                " differs from expected " +
                distrt::ShapeToString(expected.shape());
    return c;
  }
  bool exact = !(expected.dtype() == distrt::DType::kF32 ||
                 expected.dtype() == distrt::DType::kF64 ||
                 expected.dtype() == distrt::DType::kF16 ||
                 expected.dtype() == distrt::DType::kBF16);
  int64_t n = expected.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double a, e;
    if (!readAsDouble(actual, i, a) || !readAsDouble(expected, i, e)) {
      c.ok = false;
      c.message = "cannot compare dtype " +
                  distrt::DTypeName(actual.dtype());
      return c;
    }
    if (std::isnan(e) && std::isnan(a))
      continue;
    if (std::isinf(e) && a == e)
      continue;
    double diff = std::fabs(a - e);
    c.maxAbs = std::max(c.maxAbs, diff);
    if (e != 0)
      c.maxRel = std::max(c.maxRel, diff / std::fabs(e));
    bool bad = exact ? diff != 0 : !(diff <= atol + rtol * std::fabs(e));
    if (bad && c.ok) {
      c.ok = false;
      c.message = "element " + std::to_string(i) + ": got " + std::to_string(a) +
                  ", expected " + std::to_string(e);
    }
  }
  return c;
}
