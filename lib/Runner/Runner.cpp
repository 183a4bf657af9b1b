//===- Runner.cpp - compile a model for a mesh, run it, check it -*- C++
//-*-===//
#include "distopt/Runner/Runner.h"
#include "distopt/Export/RankProgramExport.h"
#include "distopt/Runner/Session.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace mlir;
using namespace distopt;
using llvm::Expected;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

Expected<Programs> distopt::exportPrograms(Compilation &compilation) {
  Programs programs;
  ExportOptions exportOptions;
  exportOptions.weightDir = compilation.weightDirectory();
  if (const PipelineSpec *pp = compilation.pipeline();
      pp && !compilation.isTraining()) {
    exportOptions.microbatches = pp->microbatches;
    exportOptions.numStages = compilation.numStages();
    exportOptions.scheduleKind = pp->schedule;
  }
  StringRef modelPath = compilation.modelPath();
  for (int64_t rank = 0, n = compilation.numRanks(); rank < n; ++rank) {
    auto local = compilation.partitionForRank(rank);
    if (failed(local))
      return fail("cannot partition " + modelPath + " for rank " +
                  llvm::Twine(rank));
    if (compilation.pipeline()) {
      int64_t stage = compilation.stageOfRank(rank);
      exportOptions.stage = stage;
      exportOptions.schedule.clear();
      // A training stage runs its whole schedule in one program.
      if (!compilation.isTraining())
        for (const ScheduleAction &a : compilation.schedule(stage))
          exportOptions.schedule.push_back({a.microbatch, a.forward()});
    }
    FailureOr<distrt::proto::RankProgram> proto =
        exportRankProgram(**local, rank, exportOptions);
    if (failed(proto))
      return fail("cannot export rank " + llvm::Twine(rank));
    std::shared_ptr<const distrt::Program> program;
    distrt::Status st = distrt::Program::Create(
        std::move(*proto),
        "rank " + std::to_string(rank) + " of " + modelPath.str(),
        exportOptions.weightDir, &program);
    if (!st.ok())
      return fail("rank " + llvm::Twine(rank) + ": " + st.ToString());
    programs.push_back(std::move(program));
  }
  if (auto err = checkPointToPoint(programs))
    return std::move(err);
  return programs;
}

Expected<Programs> distopt::compilePrograms(MLIRContext &ctx,
                                            StringRef modelPath,
                                            const CompileOptions &options) {
  auto compilation = Compilation::compile(ctx, modelPath, options);
  if (failed(compilation))
    return fail("cannot compile " + modelPath);
  return exportPrograms(**compilation);
}

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

Expected<std::vector<distrt::NamedTensor>>
distopt::makeInputs(const Programs &programs, StringRef dir, uint64_t seed) {
  std::vector<distrt::NamedTensor> inputs;
  std::mt19937_64 rng(seed);
  // Every input any rank takes (pipeline stages take different ones), in
  // order of first appearance.
  std::vector<std::pair<const distrt::Program *, int>> args;
  llvm::StringSet<> seen;
  for (const auto &p : programs)
    for (int i = 0; i < p->proto().inputs_size(); ++i)
      if (seen.insert(p->proto().inputs(i).name()).second)
        args.push_back({p.get(), i});
  for (auto [index, entry] : llvm::enumerate(args)) {
    const distrt::Program &program = *entry.first;
    int i = entry.second;
    const auto &arg = program.proto().inputs(i);
    distrt::NamedTensor named;
    named.name = arg.name();
    if (!dir.empty()) {
      // ONNX test data names its tensors; match by name, else by position.
      std::optional<distrt::Tensor> found;
      for (int k = 0;; ++k) {
        SmallString<256> path(dir);
        llvm::sys::path::append(path, "input_" + std::to_string(k) + ".pb");
        if (!llvm::sys::fs::exists(path))
          break;
        std::string fileName;
        auto t = readTensorProto(path, &fileName);
        if (!t)
          return t.takeError();
        if (fileName == arg.name() ||
            (fileName.empty() && k == static_cast<int>(index))) {
          found = std::move(*t);
          break;
        }
      }
      if (!found) {
        SmallString<256> path(dir);
        llvm::sys::path::append(path, "input_" + std::to_string(index) + ".pb");
        auto t = readTensorProto(path);
        if (!t)
          return t.takeError();
        found = std::move(*t);
      }
      named.tensor = std::move(*found);
      inputs.push_back(std::move(named));
      continue;
    }
    distrt::Shape shape(arg.slice().global_shape().begin(),
                        arg.slice().global_shape().end());
    auto dtype = static_cast<distrt::DType>(arg.dtype());
    distrt::Tensor t;
    distrt::Status st = distrt::Tensor::Allocate(dtype, shape, &t);
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
      std::uniform_int_distribution<int64_t> dist(0,
                                                  indexBound(program, i) - 1);
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
  auto session = createSession(programs, Backend::Local, threadsPerRank);
  if (!session)
    return session.takeError();
  auto outputs = (*session)->run({inputs});
  if (!outputs)
    return outputs.takeError();
  return std::move(outputs->front());
}

static bool readAsDouble(const distrt::Tensor &t, int64_t i, double &out) {
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
  case distrt::DType::kI16:
    out = t.data<int16_t>()[i];
    return true;
  case distrt::DType::kF16:
    out = distrt::HalfToFloat(t.data<distrt::f16_t>()[i].bits);
    return true;
  case distrt::DType::kBF16:
    out = distrt::BF16ToFloat(t.data<distrt::bf16_t>()[i].bits);
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

Comparison distopt::compareTensors(const distrt::Tensor &actual,
                                   const distrt::Tensor &expected,
                                   double rtol, double atol) {
  Comparison c;
  if (actual.shape() != expected.shape()) {
    c.ok = false;
    c.message = "shape " + distrt::ShapeToString(actual.shape()) +
                " differs from expected " +
                distrt::ShapeToString(expected.shape());
    return c;
  }
  if (actual.dtype() != expected.dtype()) {
    c.ok = false;
    c.message = "dtype " + distrt::DTypeName(actual.dtype()) +
                " differs from expected " + distrt::DTypeName(expected.dtype());
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
      c.message = "cannot compare dtype " + distrt::DTypeName(actual.dtype());
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
      c.message = "element " + std::to_string(i) + ": got " +
                  std::to_string(a) + ", expected " + std::to_string(e);
    }
  }
  return c;
}

llvm::Error distopt::savePackage(const Programs &programs, StringRef dir) {
  if (programs.empty())
    return fail("savePackage: no programs");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create " + dir + ": " + ec.message());
  distrt::proto::Package package;
  package.set_producer(programs.front()->proto().producer());
  *package.mutable_mesh() = programs.front()->proto().mesh();
  package.set_world_size(static_cast<int32_t>(programs.size()));
  // Every rank's inputs and outputs, once each, as whole tensors.
  auto addGlobal = [](const distrt::proto::Argument &arg,
                      google::protobuf::RepeatedPtrField<
                          distrt::proto::Argument> *into,
                      llvm::StringSet<> &seen) {
    if (!seen.insert(arg.name()).second)
      return;
    distrt::proto::Argument *global = into->Add();
    global->set_name(arg.name());
    global->set_dtype(arg.dtype());
    for (int64_t extent : arg.slice().global_shape()) {
      global->mutable_slice()->add_global_shape(extent);
      global->mutable_slice()->add_offsets(0);
      global->mutable_slice()->add_sizes(extent);
    }
  };
  llvm::StringSet<> inputs, outputs;
  for (size_t rank = 0; rank < programs.size(); ++rank) {
    const distrt::proto::RankProgram &proto = programs[rank]->proto();
    std::string file = "rank-" + std::to_string(rank) + ".pb";
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    distrt::Status st = distrt::SaveProgram(proto, path.str().str());
    if (!st.ok())
      return fail(st.ToString());
    package.add_program_files(file);
    for (const auto &arg : proto.inputs())
      addGlobal(arg, package.mutable_inputs(), inputs);
    for (const auto &arg : proto.outputs())
      addGlobal(arg, package.mutable_outputs(), outputs);
  }
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "package.pb");
  distrt::Status st = distrt::SavePackage(package, path.str().str());
  if (!st.ok())
    return fail(st.ToString());
  return llvm::Error::success();
}

int64_t distopt::microbatchesOf(const Programs &programs) {
  for (const auto &p : programs)
    if (p->proto().has_schedule() && p->proto().schedule().microbatches() > 0)
      return p->proto().schedule().microbatches();
  return 1;
}

llvm::Error distopt::checkPointToPoint(const Programs &programs) {
  // (from, to) -> the tags and byte sizes in program order.
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> sent,
      received;
  for (const auto &p : programs) {
    const auto &proto = p->proto();
    for (const auto &inst : proto.instructions()) {
      bool send = inst.op() == "send", recv = inst.op() == "recv";
      if (!send && !recv)
        continue;
      int64_t peer =
          inst.attrs().count("peer") ? inst.attrs().at("peer").i() : -1;
      int64_t tag = inst.attrs().count("tag") ? inst.attrs().at("tag").i() : 0;
      int32_t value = send ? inst.inputs(0) : inst.outputs(0);
      const distrt::TensorType &type = p->value(p->ValueIndex(value)).type;
      int64_t bytes =
          distrt::NumElements(type.shape) * distrt::DTypeSize(type.dtype);
      if (send)
        sent[{proto.rank(), static_cast<int>(peer)}].push_back({tag, bytes});
      else
        received[{static_cast<int>(peer), proto.rank()}].push_back(
            {tag, bytes});
    }
  }
  std::set<std::pair<int, int>> pairs;
  for (auto &e : sent)
    pairs.insert(e.first);
  for (auto &e : received)
    pairs.insert(e.first);
  for (auto [from, to] : pairs) {
    const auto &s = sent[{from, to}];
    const auto &r = received[{from, to}];
    for (size_t i = 0; i < std::max(s.size(), r.size()); ++i) {
      if (i >= s.size())
        return fail("rank " + llvm::Twine(to) + " receives message " +
                    llvm::Twine(i) + " (tag " + llvm::Twine(r[i].first) +
                    ") from rank " + llvm::Twine(from) +
                    ", which never sends it");
      if (i >= r.size())
        return fail("rank " + llvm::Twine(from) + " sends message " +
                    llvm::Twine(i) + " (tag " + llvm::Twine(s[i].first) +
                    ") to rank " + llvm::Twine(to) +
                    ", which never receives it");
      if (s[i] != r[i])
        return fail("rank " + llvm::Twine(from) + " sends tag " +
                    llvm::Twine(s[i].first) + " (" + llvm::Twine(s[i].second) +
                    " bytes) as message " + llvm::Twine(i) + " to rank " +
                    llvm::Twine(to) + ", which expects tag " +
                    llvm::Twine(r[i].first) + " (" + llvm::Twine(r[i].second) +
                    " bytes) there");
    }
  }
  return llvm::Error::success();
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
    distrt::Status st =
        distrt::Tensor::Allocate(first.dtype(), shape, &whole);
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
