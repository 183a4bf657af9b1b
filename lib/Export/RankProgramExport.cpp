//===- RankProgramExport.cpp - partitioned IR to rank programs --*- C++ -*-===//
#include "distopt/Export/RankProgramExport.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Support/ElementType.h"

#include "distrt/program.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/Pieces.h"
#include "distopt/Dialect/NN/IR/NNFusedOps.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Path.h"

#include <map>

using namespace mlir;
using namespace distopt;
namespace proto = distrt::proto;

namespace {

class Exporter {
public:
  Exporter(ModuleOp module, int64_t rank, const ExportOptions &options)
      : module(module), rank(rank), options(options) {}

  FailureOr<proto::RankProgram> run();

private:
  FailureOr<int32_t> define(Value v);
  /// A value of type `t` that no IR value stands for.
  FailureOr<int32_t> newValue(Location loc, Type t);
  LogicalResult exportOp(func::FuncOp func, Operation &op);
  /// The loop's instructions, then its body's, then the sums.
  LogicalResult exportLoop(func::FuncOp func, nn::MicrobatchLoopOp loop);
  FailureOr<int32_t> use(Operation *user, Value v);
  FailureOr<proto::DType> dtypeOf(Location loc, Type t);
  LogicalResult fillSlice(Location loc, RankedTensorType local,
                          RankedTensorType global, dist::ShardingAttr sharding,
                          proto::Slice *out);
  /// The file, offset, dtype and slice by which `reader` (of local type
  /// `local`) reads `source`'s stored bytes.
  LogicalResult fillWeightSource(nn::WeightOp source, Operation *reader,
                                 RankedTensorType local, proto::Weight *w);
  LogicalResult exportWeight(nn::WeightOp op);
  LogicalResult exportVariable(nn::VariableOp op);
  /// The module's weights by persistent key (for compute copies).
  std::map<std::string, nn::WeightOp> weightsByKey;
  /// Weight entries by persistent key (a training step's updates name them).
  std::map<std::string, SmallVector<int>> persistentEntries;
  LogicalResult exportConstant(nn::ConstantOp op);
  /// Splat constants deferred by exportConstant, made where first read.
  DenseMap<Value, nn::ConstantOp> deferredSplats;
  /// An `expand` of its one element for each deferred splat `op` reads.
  LogicalResult makeDeferredSplats(Operation &op);
  LogicalResult exportNNOp(Operation *op);
  /// A matmul in its target's fused form (dist-fuse-for-target).
  LogicalResult exportFusedMatMul(nn::FusedMatMulOp op);
  /// A fused op as one instruction of `kernel` with one integer attribute.
  LogicalResult exportFused(Operation *op, StringRef kernel, StringRef attr,
                            int64_t value);
  /// A fused softmax or softmax gradient with attention's scale and mask
  /// (the mask its last input).
  LogicalResult exportSoftmax(Operation *op, StringRef kernel, int64_t axis,
                              std::optional<APFloat> scale, bool divide,
                              std::optional<APFloat> fill, bool maskKeeps);
  LogicalResult addOperandsAndResults(Operation *op, proto::Instruction *inst,
                                     Location resultLoc);
  LogicalResult exportDistOp(Operation *op);
  LogicalResult exportReturn(func::FuncOp func, Operation *ret);
  /// Input (or, `isResult`, output) `i` of `func`, value `v` of id `id`:
  /// its name, dtype and slice.
  LogicalResult fillArgument(proto::Argument *arg, Value v, int32_t id,
                             func::FuncOp func, unsigned i, bool isResult,
                             Location loc);
  /// A constant holding value `id`, typed like it; the caller sets its data.
  proto::Tensor *newConstant(int32_t id);
  /// An instruction at `op`'s location (or `loc`, when given).
  proto::Instruction *newInstruction(Operation *op, StringRef kernel,
                                     std::optional<Location> loc = {});
  /// The instruction's inputs (op's operands) and outputs (its results).
  LogicalResult addInputsAndOutputs(proto::Instruction *inst, Operation *op);
  /// Members of the group over `axes` containing this rank, in group order,
  /// and this rank's position in it.
  SmallVector<int64_t> groupOf(ArrayRef<int64_t> axes, int64_t *position);
  SmallVector<int64_t> axisIndices(ArrayAttr axes);

  ModuleOp module;
  int64_t rank;
  const ExportOptions &options;
  dist::MeshOp mesh;
  SmallVector<int64_t> meshSizes, coords;
  proto::RankProgram prog;
  DenseMap<Value, int32_t> ids;
};

} // namespace

/// A rank program stores a dtype by its number in the dtype table.
FailureOr<proto::DType> Exporter::dtypeOf(Location loc, Type t) {
  std::optional<distrt::DType> dtype = distopt::dtypeOf(t);
  if (!dtype)
    return emitError(loc, "element type ") << t << " has no runtime dtype";
  return static_cast<proto::DType>(*dtype);
}

FailureOr<int32_t> Exporter::define(Value v) {
  FailureOr<int32_t> id = newValue(v.getLoc(), v.getType());
  if (succeeded(id))
    ids[v] = *id;
  return id;
}

FailureOr<int32_t> Exporter::newValue(Location loc, Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type)
    return emitError(loc, "only tensors can be exported, got ") << t;
  if (!type.hasStaticShape())
    return emitError(loc, "value of type ")
           << type << " has a dynamic shape; export needs a per-rank program "
           << "(dist-partition{rank=N})";
  FailureOr<proto::DType> dt = dtypeOf(loc, type.getElementType());
  if (failed(dt))
    return failure();
  int32_t id = prog.values_size();
  proto::Value *pv = prog.add_values();
  pv->set_id(id);
  pv->mutable_type()->set_dtype(*dt);
  for (int64_t s : type.getShape())
    pv->mutable_type()->add_shape(s);
  if (auto name = dyn_cast<NameLoc>(loc))
    pv->set_name(name.getName().str());
  return id;
}

FailureOr<int32_t> Exporter::use(Operation *user, Value v) {
  auto it = ids.find(v);
  if (it == ids.end())
    return user->emitError("uses a value the exporter has not seen");
  return it->second;
}

LogicalResult Exporter::fillSlice(Location loc, RankedTensorType local,
                                  RankedTensorType global,
                                  dist::ShardingAttr sharding,
                                  proto::Slice *out) {
  for (int64_t d = 0; d < global.getRank(); ++d) {
    out->add_global_shape(global.getDimSize(d));
    int64_t offset = 0;
    if (sharding && mesh)
      offset =
          dist::localPiece(global.getDimSize(d), d, sharding, meshSizes, coords)
              .offset;
    out->add_offsets(offset);
    out->add_sizes(local.getDimSize(d));
  }
  if (sharding && sharding.hasPartial())
    return emitError(loc, "a partial value cannot be a model input, output or "
                          "weight: ")
           << sharding;
  return success();
}

static dist::ShardingAttr firstSharding(Operation *op) {
  if (auto array = op->getAttrOfType<ArrayAttr>(dist::kShardingAttr))
    if (!array.empty())
      return dyn_cast<dist::ShardingAttr>(array[0]);
  return {};
}

static RankedTensorType globalTypeOf(Operation *op, RankedTensorType local) {
  if (auto attr = op->getAttrOfType<TypeAttr>(dist::kGlobalTypeAttr))
    return cast<RankedTensorType>(attr.getValue());
  return local;
}

LogicalResult Exporter::fillWeightSource(nn::WeightOp source, Operation *reader,
                                         RankedTensorType local,
                                         proto::Weight *w) {
  if (source.getFile().empty())
    return source.emitError("weight '")
           << source.getName() << "' has no file to read its bytes from";
  SmallString<256> path(source.getFile());
  if (!llvm::sys::path::is_absolute(path) && !options.weightDir.empty()) {
    path = options.weightDir;
    llvm::sys::path::append(path, source.getFile());
  }
  w->set_file(path.str().str());
  w->set_offset(source.getOffset());
  // The file's dtype; the loader converts it to the value's.
  w->set_dtype(*dtypeOf(source.getLoc(), source.getStoredElementType()));
  if (failed(fillSlice(reader->getLoc(), local, globalTypeOf(reader, local),
                       firstSharding(reader), w->mutable_slice())))
    return failure();
  // A window of a larger stored tensor: offsets are within the stored one.
  if (auto stored = source.getStoredShape()) {
    proto::Slice *s = w->mutable_slice();
    for (int64_t d = 0; d < s->offsets_size(); ++d) {
      s->set_global_shape(d, (*stored)[d]);
      s->set_offsets(d, s->offsets(d) + (*source.getWindowOffsets())[d]);
    }
  }
  return success();
}

LogicalResult Exporter::exportWeight(nn::WeightOp op) {
  FailureOr<int32_t> id = define(op.getResult());
  if (failed(id))
    return failure();
  proto::Weight *w = prog.add_weights();
  w->set_value(*id);
  w->set_name(op.getName().str());
  if (failed(fillWeightSource(op, op, op.getResult().getType(), w)))
    return failure();
  persistentEntries[nn::getPersistentKey(op)].push_back(prog.weights_size() -
                                                        1);
  return success();
}

LogicalResult Exporter::exportVariable(nn::VariableOp op) {
  FailureOr<int32_t> id = define(op.getResult());
  if (failed(id))
    return failure();
  auto local = op.getResult().getType();
  proto::Weight *w = prog.add_weights();
  w->set_value(*id);
  w->set_name(op.getName().str());
  persistentEntries[op.getName().str()].push_back(prog.weights_size() - 1);
  // A compute copy starts as its master's stored bytes, converted.
  if (auto of = op->getAttrOfType<StringAttr>(nn::kCopyOfAttr)) {
    if (weightsByKey.empty())
      module.walk([&](nn::WeightOp m) {
        weightsByKey.try_emplace(nn::getPersistentKey(m), m);
      });
    auto master = weightsByKey.find(of.str());
    if (master == weightsByKey.end())
      return op.emitError("compute copy '")
             << op.getName() << "' of '" << of.getValue()
             << "', a parameter this program does not hold";
    // Named, as its master is, by the stored tensor (a window's copies
    // together cover it), and pointing at that tensor by name.
    w->set_name(master->second.getName().str() + "/compute_copy");
    w->set_copy_of(master->second.getName().str());
    if (failed(fillWeightSource(master->second, op, local, w)))
      return failure();
    return success();
  }
  w->set_zeros(true);
  w->set_dtype(*dtypeOf(op.getLoc(), local.getElementType()));
  if (failed(fillSlice(op.getLoc(), local, globalTypeOf(op, local),
                       firstSharding(op), w->mutable_slice())))
    return failure();
  return success();
}

proto::Tensor *Exporter::newConstant(int32_t id) {
  proto::Constant *c = prog.add_constants();
  c->set_value(id);
  proto::Tensor *t = c->mutable_tensor();
  *t->mutable_type() = prog.values(id).type();
  return t;
}

/// Splat constants of at least this many bytes are not stored whole: an
/// `expand` of their one element makes them where they are first read, as
/// a run value. A gradient's zeroed base (the embedding's scatter-add) is
/// then neither a persistent copy nor the program file's bytes, and its
/// reader may take its buffer over.
constexpr int64_t kExpandedSplatBytes = 64 << 10;

/// Whether every reader of `op`'s value is an op of one block that
/// exportOp exports (not a terminator), so the first reader's place is
/// before every other's.
static bool readInOneBlock(nn::ConstantOp op) {
  Value v = op.getResult();
  if (v.use_empty())
    return false;
  Block *block = (*v.user_begin())->getBlock();
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return user->getBlock() == block &&
           !user->hasTrait<OpTrait::IsTerminator>();
  });
}

LogicalResult Exporter::makeDeferredSplats(Operation &op) {
  for (Value v : op.getOperands()) {
    auto it = deferredSplats.find(v);
    if (it == deferredSplats.end())
      continue;
    nn::ConstantOp c = it->second;
    deferredSplats.erase(it);
    auto dense = cast<DenseElementsAttr>(c.getValue());
    Type et = dense.getElementType();
    FailureOr<int32_t> one =
        newValue(c.getLoc(), RankedTensorType::get({}, et));
    if (failed(one))
      return failure();
    std::string bytes;
    if (et.isInteger(1))
      bytes.push_back(dense.getSplatValue<bool>() ? 1 : 0);
    else
      bytes.assign(dense.getRawData().data(),
                   et.getIntOrFloatBitWidth() / 8);
    newConstant(*one)->set_data(std::move(bytes));
    proto::Instruction *inst = newInstruction(c, "expand");
    inst->add_inputs(*one);
    FailureOr<int32_t> id = define(v);
    if (failed(id))
      return failure();
    inst->add_outputs(*id);
  }
  return success();
}

LogicalResult Exporter::exportConstant(nn::ConstantOp op) {
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
      dense && dense.isSplat() && readInOneBlock(op)) {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t width = std::max<int64_t>(
        1, type.getElementType().getIntOrFloatBitWidth() / 8);
    if (type.hasStaticShape() &&
        type.getNumElements() * width >= kExpandedSplatBytes) {
      deferredSplats[op.getResult()] = op;
      return success();
    }
  }
  FailureOr<int32_t> id = define(op.getResult());
  if (failed(id))
    return failure();
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return op.emitError("only dense constants can be exported");
  proto::Tensor *t = newConstant(*id);
  Type et = dense.getElementType();
  std::string bytes;
  int64_t n = dense.getNumElements();
  if (et.isInteger(1)) {
    for (bool b : dense.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
  } else if (dense.isSplat()) {
    ArrayRef<char> raw = dense.getRawData();
    size_t width = et.getIntOrFloatBitWidth() / 8;
    for (int64_t i = 0; i < n; ++i)
      bytes.append(raw.data(), width);
  } else {
    ArrayRef<char> raw = dense.getRawData();
    bytes.assign(raw.data(), raw.size());
  }
  t->set_data(std::move(bytes));
  return success();
}

LogicalResult Exporter::addInputsAndOutputs(proto::Instruction *inst,
                                            Operation *op) {
  for (Value v : op->getOperands()) {
    FailureOr<int32_t> id = use(op, v);
    if (failed(id))
      return failure();
    inst->add_inputs(*id);
  }
  for (Value v : op->getResults()) {
    FailureOr<int32_t> id = define(v);
    if (failed(id))
      return failure();
    inst->add_outputs(*id);
  }
  return success();
}

proto::Instruction *Exporter::newInstruction(Operation *op, StringRef kernel,
                                             std::optional<Location> loc) {
  proto::Instruction *inst = prog.add_instructions();
  inst->set_op(kernel.str());
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.value_or(op->getLoc()).print(os);
  inst->set_location(text);
  return inst;
}

static void setInts(proto::Attribute &a, ArrayRef<int64_t> values) {
  for (int64_t v : values)
    a.mutable_ints()->add_values(v);
}

LogicalResult Exporter::exportNNOp(Operation *op) {
  proto::Instruction *inst = newInstruction(op, op->getName().stripDialect());
  if (failed(addInputsAndOutputs(inst, op)))
    return failure();
  auto &attrs = *inst->mutable_attrs();
  for (NamedAttribute na : op->getAttrDictionary()) {
    StringRef name = na.getName().getValue();
    if (name.starts_with("dist.") || name.starts_with("nn.") ||
        name == "operandSegmentSizes")
      continue;
    proto::Attribute a;
    Attribute v = na.getValue();
    if (auto arr = dyn_cast<DenseI64ArrayAttr>(v))
      setInts(a, arr.asArrayRef());
    else if (auto floats = dyn_cast<DenseF64ArrayAttr>(v))
      for (double f : floats.asArrayRef())
        a.mutable_floats()->add_values(f);
    else if (auto b = dyn_cast<BoolAttr>(v))
      a.set_i(b.getValue() ? 1 : 0);
    else if (auto i = dyn_cast<IntegerAttr>(v))
      a.set_i(i.getInt());
    else if (auto f = dyn_cast<FloatAttr>(v))
      a.set_f(f.getValueAsDouble());
    else if (auto s = dyn_cast<StringAttr>(v))
      a.set_s(s.getValue().str());
    else if (isa<UnitAttr>(v))
      a.set_i(1);
    else
      return op->emitError("attribute '") << name << "' cannot be exported";
    attrs[name.str()] = a;
  }
  // Unit attributes are absent when false; the runtime wants them spelled.
  StringRef kernel = op->getName().stripDialect();
  auto defaultFlag = [&](const char *flag) {
    if (!attrs.count(flag))
      attrs[flag].set_i(0);
  };
  if (kernel.starts_with("reduce_") || kernel.starts_with("arg"))
    defaultFlag("keepdims");
  if (kernel == "max_pool" || kernel == "avg_pool") {
    defaultFlag("ceil_mode");
    defaultFlag("count_include_pad");
  }
  return success();
}

/// A fused op's operands as `inst`'s inputs and its results as its
/// outputs, named after `resultLoc`.
LogicalResult Exporter::addOperandsAndResults(Operation *op,
                                             proto::Instruction *inst,
                                             Location resultLoc) {
  for (Value v : op->getOperands()) {
    FailureOr<int32_t> id = use(op, v);
    if (failed(id))
      return failure();
    inst->add_inputs(*id);
  }
  for (Value result : op->getResults()) {
    FailureOr<int32_t> id = newValue(resultLoc, result.getType());
    if (failed(id))
      return failure();
    ids[result] = *id;
    inst->add_outputs(*id);
  }
  return success();
}

/// A fused op's location lists the ops it stands for: the first and the
/// last of them (both the op's own location otherwise).
static std::pair<Location, Location> firstAndLastOf(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc))
    return {fused.getLocations().front(), fused.getLocations().back()};
  return {loc, loc};
}

/// One `matmul` instruction: the operands as stored with `transpose_lhs` /
/// `transpose_rhs`, the bias as a third input, `epilogue = "gelu"`. A fused
/// op's location lists the ops it stands for: the instruction is at the
/// first (the product), its value is named after the last (what it holds).
LogicalResult Exporter::exportFusedMatMul(nn::FusedMatMulOp op) {
  auto [first, last] = firstAndLastOf(op.getLoc());
  proto::Instruction *inst = newInstruction(op, "matmul", first);
  auto &attrs = *inst->mutable_attrs();
  if (op.getTransposeLhs())
    attrs["transpose_lhs"].set_i(1);
  if (op.getTransposeRhs())
    attrs["transpose_rhs"].set_i(1);
  if (op.getGelu())
    attrs["epilogue"].set_s("gelu");
  return addOperandsAndResults(op, inst, last);
}

/// One instruction of `kernel` with attribute `attr` = `value`:
/// `softmax_grad` from y and dy and `softmax` of an input read as stored
/// (`axis`), `cross_entropy_sums` and `cross_entropy_grad`
/// (`first_class`); the op's operands and results in order, at the first
/// op the fused op stands for and named after the last, as a fused matmul
/// is.
LogicalResult Exporter::exportFused(Operation *op, StringRef kernel,
                                    StringRef attr, int64_t value) {
  auto [first, last] = firstAndLastOf(op->getLoc());
  proto::Instruction *inst = newInstruction(op, kernel, first);
  (*inst->mutable_attrs())[attr.str()].set_i(value);
  return addOperandsAndResults(op, inst, last);
}

/// `softmax` / `softmax_grad` with `axis` and, where attention's scale and
/// mask were fused in, `scale` (`divide` = 1 for a quotient), `fill` and
/// `mask_keeps` = 1; the mask is the instruction's last input.
LogicalResult Exporter::exportSoftmax(Operation *op, StringRef kernel,
                                      int64_t axis,
                                      std::optional<APFloat> scale, bool divide,
                                      std::optional<APFloat> fill,
                                      bool maskKeeps) {
  auto [first, last] = firstAndLastOf(op->getLoc());
  proto::Instruction *inst = newInstruction(op, kernel, first);
  auto &attrs = *inst->mutable_attrs();
  attrs["axis"].set_i(axis);
  if (scale)
    attrs["scale"].set_f(scale->convertToDouble());
  if (divide)
    attrs["divide"].set_i(1);
  if (fill)
    attrs["fill"].set_f(fill->convertToDouble());
  if (maskKeeps)
    attrs["mask_keeps"].set_i(1);
  return addOperandsAndResults(op, inst, last);
}

SmallVector<int64_t> Exporter::axisIndices(ArrayAttr axes) {
  SmallVector<int64_t> out;
  for (Attribute a : axes)
    out.push_back(mesh.getAxisIndex(cast<StringAttr>(a).getValue()));
  return out;
}

SmallVector<int64_t> Exporter::groupOf(ArrayRef<int64_t> axes,
                                       int64_t *position) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= meshSizes[a];
  SmallVector<int64_t> ranks;
  *position = 0;
  for (int64_t a : axes)
    *position = *position * meshSizes[a] + coords[a];
  for (int64_t i = 0; i < n; ++i) {
    SmallVector<int64_t> c(coords);
    int64_t rem = i;
    for (int64_t j = axes.size() - 1; j >= 0; --j) {
      c[axes[j]] = rem % meshSizes[axes[j]];
      rem /= meshSizes[axes[j]];
    }
    ranks.push_back(mesh.getRank(c));
  }
  return ranks;
}

LogicalResult Exporter::exportDistOp(Operation *op) {
  if (isa<dist::ReshardOp>(op))
    return op->emitError("reshard not lowered to collectives: run "
                         "dist-reshard-to-collectives before export");
  if (isa<dist::AnnotateOp>(op))
    return op->emitError("annotation left in a partitioned program");
  if (!mesh)
    return op->emitError("communication without a mesh");

  auto addGroup = [&](proto::Instruction *inst, ArrayAttr axes,
                      int64_t *position) {
    for (int64_t r : groupOf(axisIndices(axes), position))
      inst->mutable_group()->add_ranks(r);
  };
  auto io = [&](proto::Instruction *inst) {
    return addInputsAndOutputs(inst, op);
  };
  auto sizesOr = [](std::optional<ArrayRef<int64_t>> sizes, int64_t n,
                    int64_t each) {
    SmallVector<int64_t> out;
    if (sizes)
      out.assign(sizes->begin(), sizes->end());
    else
      out.assign(n, each);
    return out;
  };
  int64_t pos = 0;
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<dist::AllReduceOp, dist::ToPartialOp>([&](auto o) {
        auto *inst = newInstruction(op, op->getName().stripDialect());
        addGroup(inst, o.getAxes(), &pos);
        (*inst->mutable_attrs())["reduction"].set_s(
            dist::stringifyReductionKind(o.getReduction()).str());
        return io(inst);
      })
      .Case([&](dist::AllGatherOp o) {
        auto *inst = newInstruction(op, "all_gather");
        addGroup(inst, o.getAxes(), &pos);
        int64_t d = o.getGatherDim();
        auto &attrs = *inst->mutable_attrs();
        attrs["dim"].set_i(d);
        setInts(attrs["sizes"],
                sizesOr(o.getSizes(), inst->group().ranks_size(),
                        o.getInput().getType().getDimSize(d)));
        return io(inst);
      })
      .Case([&](dist::ReduceScatterOp o) {
        auto *inst = newInstruction(op, "reduce_scatter");
        addGroup(inst, o.getAxes(), &pos);
        int64_t d = o.getScatterDim();
        auto &attrs = *inst->mutable_attrs();
        attrs["dim"].set_i(d);
        attrs["reduction"].set_s(
            dist::stringifyReductionKind(o.getReduction()).str());
        setInts(attrs["sizes"],
                sizesOr(o.getSizes(), inst->group().ranks_size(),
                        o.getResult().getType().getDimSize(d)));
        return io(inst);
      })
      .Case([&](dist::AllToAllOp o) {
        auto *inst = newInstruction(op, "all_to_all");
        addGroup(inst, o.getAxes(), &pos);
        int64_t n = inst->group().ranks_size();
        auto &attrs = *inst->mutable_attrs();
        attrs["split_dim"].set_i(o.getSplitDim());
        attrs["concat_dim"].set_i(o.getConcatDim());
        setInts(attrs["split_sizes"],
                sizesOr(o.getSplitSizes(), n,
                        o.getResult().getType().getDimSize(o.getSplitDim())));
        setInts(attrs["concat_sizes"],
                sizesOr(o.getConcatSizes(), n,
                        o.getInput().getType().getDimSize(o.getConcatDim())));
        return io(inst);
      })
      .Case([&](dist::LocalSliceOp o) {
        // No communication: a slice at this member's offset.
        auto *inst = newInstruction(op, "slice");
        SmallVector<int64_t> group = groupOf(axisIndices(o.getAxes()), &pos);
        int64_t d = o.getDim();
        SmallVector<int64_t> sizes = sizesOr(
            o.getSizes(), group.size(), o.getResult().getType().getDimSize(d));
        int64_t start = 0;
        for (int64_t i = 0; i < pos; ++i)
          start += sizes[i];
        auto in = o.getInput().getType();
        SmallVector<int64_t> starts(in.getRank(), 0), ends(in.getShape()),
            steps(in.getRank(), 1);
        starts[d] = start;
        ends[d] = start + sizes[pos];
        auto &attrs = *inst->mutable_attrs();
        setInts(attrs["starts"], starts);
        setInts(attrs["ends"], ends);
        setInts(attrs["steps"], steps);
        return io(inst);
      })
      .Case([&](dist::CollectivePermuteOp o) {
        auto *inst = newInstruction(op, "collective_permute");
        addGroup(inst, o.getAxes(), &pos);
        auto &attrs = *inst->mutable_attrs();
        ArrayRef<int64_t> pairs = o.getPairs();
        for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
          attrs["sources"].mutable_ints()->add_values(
              inst->group().ranks(pairs[i]));
          attrs["targets"].mutable_ints()->add_values(
              inst->group().ranks(pairs[i + 1]));
        }
        return io(inst);
      })
      .Case<dist::SendOp, dist::RecvOp>([&](auto o) {
        auto *inst = newInstruction(op, op->getName().stripDialect());
        SmallVector<int64_t> c(coords);
        c[mesh.getAxisIndex(o.getAxis())] = o.getPeer();
        auto &attrs = *inst->mutable_attrs();
        attrs["peer"].set_i(mesh.getRank(c));
        attrs["tag"].set_i(o.getTag());
        return io(inst);
      })
      .Case([&](dist::PieceOffsetOp o) -> LogicalResult {
        // Folded for this rank: a scalar constant.
        FailureOr<int32_t> id = define(o.getResult());
        if (failed(id))
          return failure();
        int64_t offset = dist::localPiece(o.getExtentAttr().getInt(),
                                          o.getDimAttr().getInt(),
                                          o.getSharding(), meshSizes, coords)
                             .offset;
        proto::Tensor *t = newConstant(*id);
        if (o.getResult().getType().getElementType().isInteger(32)) {
          int32_t v = static_cast<int32_t>(offset);
          t->set_data(
              std::string(reinterpret_cast<const char *>(&v), sizeof(v)));
        } else {
          t->set_data(std::string(reinterpret_cast<const char *>(&offset),
                                  sizeof(offset)));
        }
        return success();
      })
      .Default([&](Operation *) {
        return op->emitError("cannot export ") << op->getName();
      });
}

LogicalResult Exporter::exportReturn(func::FuncOp func, Operation *ret) {
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    FailureOr<int32_t> id = use(ret, v);
    if (failed(id))
      return failure();
    // A training step's next value of a weight or state: written back in
    // place by the runtime, not an output.
    if (auto key = func.getResultAttrOfType<StringAttr>(i, nn::kUpdatesAttr)) {
      auto it = persistentEntries.find(key.str());
      if (it == persistentEntries.end())
        return ret->emitError("update of '")
               << key.getValue() << "', which this program does not hold";
      for (int w : it->second)
        prog.mutable_weights(w)->set_update(*id);
      continue;
    }
    if (failed(fillArgument(prog.add_outputs(), v, *id, func, i,
                            /*isResult=*/true, ret->getLoc())))
      return failure();
  }
  return success();
}

LogicalResult Exporter::fillArgument(proto::Argument *arg, Value v, int32_t id,
                                     func::FuncOp func, unsigned i,
                                     bool isResult, Location loc) {
  auto attr = [&](StringRef name) {
    return isResult ? func.getResultAttr(i, name) : func.getArgAttr(i, name);
  };
  auto local = cast<RankedTensorType>(v.getType());
  arg->set_value(id);
  auto name = dyn_cast_or_null<StringAttr>(attr(nn::kNameAttr));
  arg->set_name(name ? name.str()
                     : (isResult ? "output_" : "input_") + std::to_string(i));
  arg->set_dtype(*dtypeOf(loc, local.getElementType()));
  RankedTensorType global = local;
  if (auto g = dyn_cast_or_null<TypeAttr>(attr(dist::kGlobalTypeAttr)))
    global = cast<RankedTensorType>(g.getValue());
  // The sequence in mirrored chunks (context parallelism's load balancing):
  // the runtime feeds and assembles the global tensor in this order.
  if (auto chunks = dyn_cast_or_null<DenseI64ArrayAttr>(
          attr(dist::kSequenceChunksAttr))) {
    proto::ChunkOrder *order = arg->mutable_chunk_order();
    order->set_dim(1);
    for (int64_t c : chunks.asArrayRef())
      order->add_chunks(c);
  }
  return fillSlice(
      loc, local, global,
      dyn_cast_or_null<dist::ShardingAttr>(attr(dist::kShardingAttr)),
      arg->mutable_slice());
}

FailureOr<proto::RankProgram> Exporter::run() {
  func::FuncOp func = module.lookupSymbol<func::FuncOp>("main");
  if (!func) {
    auto funcs = module.getOps<func::FuncOp>();
    if (std::distance(funcs.begin(), funcs.end()) != 1)
      return module.emitError("export needs a function @main or exactly one "
                              "function");
    func = *funcs.begin();
  }
  auto meshes = module.getOps<dist::MeshOp>();
  if (!meshes.empty())
    mesh = *meshes.begin();
  if (mesh) {
    meshSizes.assign(mesh.getAxisSizes().begin(), mesh.getAxisSizes().end());
    if (rank < 0 || rank >= mesh.getNumDevices())
      return module.emitError("rank ") << rank << " is outside the mesh";
    coords = mesh.getCoords(rank);
    prog.set_world_size(mesh.getNumDevices());
    for (int64_t a = 0; a < mesh.getNumAxes(); ++a) {
      prog.mutable_mesh()->add_axis_names(mesh.getAxisName(a).str());
      prog.mutable_mesh()->add_axis_sizes(meshSizes[a]);
      prog.add_coords(coords[a]);
    }
  } else {
    prog.set_world_size(1);
  }
  prog.set_format_version(distrt::kFormatVersion);
  prog.set_end_mark(distrt::kEndMark);
  prog.set_producer("distopt 0.1.0");
  prog.set_rank(rank);
  prog.set_stage(options.stage);
  if (!options.schedule.empty()) {
    proto::PipelineSchedule *sched = prog.mutable_schedule();
    sched->set_microbatches(options.microbatches);
    sched->set_kind(options.scheduleKind);
    sched->set_stage(options.stage);
    sched->set_num_stages(options.numStages);
    for (auto [mb, forward] : options.schedule) {
      proto::ScheduleAction *a = sched->add_actions();
      a->set_microbatch(mb);
      a->set_phase(forward ? proto::ScheduleAction::FORWARD
                           : proto::ScheduleAction::BACKWARD);
    }
  }

  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    FailureOr<int32_t> id = define(arg);
    if (failed(id) || failed(fillArgument(prog.add_inputs(), arg, *id, func,
                                          arg.getArgNumber(),
                                          /*isResult=*/false, arg.getLoc())))
      return failure();
  }
  for (Operation &op : entry)
    if (failed(exportOp(func, op)))
      return failure();
  return prog;
}

LogicalResult Exporter::exportOp(func::FuncOp func, Operation &op) {
  if (failed(makeDeferredSplats(op)))
    return failure();
  if (auto w = dyn_cast<nn::WeightOp>(op))
    return exportWeight(w);
  if (auto v = dyn_cast<nn::VariableOp>(op))
    return exportVariable(v);
  if (auto c = dyn_cast<nn::ConstantOp>(op))
    return exportConstant(c);
  if (auto mm = dyn_cast<nn::FusedMatMulOp>(op))
    return exportFusedMatMul(mm);
  if (auto sg = dyn_cast<nn::FusedSoftmaxGradOp>(op))
    return exportSoftmax(sg, "softmax_grad", sg.getAxis(), sg.getScale(),
                         sg.getDivide(), std::nullopt, sg.getMaskKeeps());
  if (auto sm = dyn_cast<nn::FusedSoftmaxOp>(op))
    return exportSoftmax(sm, "softmax", sm.getAxis(), sm.getScale(),
                         sm.getDivide(), sm.getFill(), sm.getMaskKeeps());
  if (auto ss = dyn_cast<nn::FusedSumSquaresOp>(op)) {
    auto [first, last] = firstAndLastOf(ss.getLoc());
    return addOperandsAndResults(ss, newInstruction(ss, "sum_squares", first),
                                 last);
  }
  if (auto gg = dyn_cast<nn::FusedGeluGradOp>(op)) {
    auto [first, last] = firstAndLastOf(gg.getLoc());
    return addOperandsAndResults(gg, newInstruction(gg, "gelu_grad", first),
                                 last);
  }
  if (auto sums = dyn_cast<nn::FusedCrossEntropySumsOp>(op))
    return exportFused(sums, "cross_entropy_sums", "first_class",
                       sums.getFirstClass());
  if (auto grad = dyn_cast<nn::FusedCrossEntropyGradOp>(op))
    return exportFused(grad, "cross_entropy_grad", "first_class",
                       grad.getFirstClass());
  if (auto loop = dyn_cast<nn::MicrobatchLoopOp>(op))
    return exportLoop(func, loop);
  if (isa<nn::NNDialect>(op.getDialect()))
    return exportNNOp(&op);
  if (isa<dist::DistDialect>(op.getDialect()))
    return exportDistOp(&op);
  if (isa<func::ReturnOp>(op))
    return exportReturn(func, &op);
  return op.emitError("cannot export ") << op.getName();
}

/// The pass number of a scheduled loop's last action, the sums
/// (docs/rank-program.md); 0-2 are nn.microbatch_action's passes.
constexpr int64_t kSumAction = 3;

/// microbatch_loop defines the index and a zeroed running sum per result;
/// the body adds what it yields to them; microbatch_yield carries the sums
/// into the next microbatch, and out as the results after the last
/// (docs/rank-program.md).
LogicalResult Exporter::exportLoop(func::FuncOp func,
                                   nn::MicrobatchLoopOp loop) {
  const int begin = prog.instructions_size();
  proto::Instruction *start = newInstruction(loop, "microbatch_loop");
  (*start->mutable_attrs())["microbatches"].set_i(loop.getMicrobatches());
  // A pipeline stage's schedule: its actions, and the tag stride that keeps
  // the microbatches' messages apart.
  if (std::optional<ArrayRef<int64_t>> schedule = loop.getSchedule()) {
    setInts((*start->mutable_attrs())["schedule"], *schedule);
    (*start->mutable_attrs())["tag_stride"].set_i(
        loop.getTagStride().value_or(0));
  }
  FailureOr<int32_t> index = define(loop.getIndex());
  if (failed(index))
    return failure();
  start->add_outputs(*index);
  SmallVector<int32_t> sums;
  for (Value r : loop.getResults()) {
    FailureOr<int32_t> id = newValue(r.getLoc(), r.getType());
    if (failed(id))
      return failure();
    sums.push_back(*id);
    start->add_outputs(*id);
  }
  Block &body = loop.getBody().front();
  Operation *yield = body.getTerminator();
  // Each sum's add comes right after the op that makes what it adds, so
  // that a microbatch's gradients join the running sums as they are made
  // instead of all waiting for the end of its backward; the runtime's sum
  // takes the add's result at once.
  SmallVector<int32_t> next(sums.size(), -1);
  DenseMap<Value, SmallVector<unsigned, 1>> sumsOf; // yielded value -> sums
  for (OpOperand &yielded : yield->getOpOperands())
    sumsOf[yielded.get()].push_back(yielded.getOperandNumber());
  auto addToSums = [&](Value v) -> LogicalResult {
    auto it = sumsOf.find(v);
    if (it == sumsOf.end())
      return success();
    for (unsigned k : it->second) {
      if (next[k] >= 0)
        continue;
      FailureOr<int32_t> y = use(yield, v);
      FailureOr<int32_t> id = newValue(v.getLoc(), v.getType());
      if (failed(y) || failed(id))
        return failure();
      proto::Instruction *add = newInstruction(yield, "add");
      add->add_inputs(sums[k]);
      add->add_inputs(*y);
      add->add_outputs(*id);
      next[k] = *id;
    }
    return success();
  };
  for (Operation &op : body.without_terminator()) {
    if (auto marker = dyn_cast<nn::MicrobatchActionOp>(op)) {
      proto::Instruction *inst = newInstruction(marker, "microbatch_action");
      (*inst->mutable_attrs())["pass"].set_i(marker.getPass());
      (*inst->mutable_attrs())["chunk"].set_i(marker.getChunk());
      continue;
    }
    if (failed(exportOp(func, op)))
      return failure();
    for (Value r : op.getResults())
      if (failed(addToSums(r)))
        return failure();
  }
  // The sums: the last action of a scheduled loop (after a microbatch's
  // other actions), adding what the body did not make.
  if (loop.getSchedule()) {
    proto::Instruction *inst = newInstruction(loop, "microbatch_action");
    (*inst->mutable_attrs())["pass"].set_i(kSumAction);
    (*inst->mutable_attrs())["chunk"].set_i(0);
  }
  for (Value v : yield->getOperands())
    if (!v.getDefiningOp() || v.getDefiningOp()->getBlock() != &body)
      if (failed(addToSums(v)))
        return failure();
  proto::Instruction *end = newInstruction(loop, "microbatch_yield");
  (*end->mutable_attrs())["loop"].set_i(begin);
  for (int32_t id : next)
    end->add_inputs(id);
  for (Value r : loop.getResults()) {
    FailureOr<int32_t> id = define(r);
    if (failed(id))
      return failure();
    end->add_outputs(*id);
  }
  return success();
}

FailureOr<proto::RankProgram>
distopt::exportRankProgram(ModuleOp module, int64_t rank,
                           const ExportOptions &options) {
  Exporter exporter(module, rank, options);
  return exporter.run();
}
