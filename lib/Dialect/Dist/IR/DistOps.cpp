//===- DistOps.cpp - dist dialect operations --------------------*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace distopt::dist;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

ParseResult MeshOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes))
    return failure();
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, [&] {
        std::string axis;
        int64_t size;
        if (parser.parseKeywordOrString(&axis) || parser.parseEqual() ||
            parser.parseInteger(size))
          return failure();
        names.push_back(parser.getBuilder().getStringAttr(axis));
        sizes.push_back(size);
        return success();
      }))
    return failure();
  Builder &b = parser.getBuilder();
  result.addAttribute(getAxisNamesAttrName(result.name), b.getArrayAttr(names));
  result.addAttribute(getAxisSizesAttrName(result.name),
                      b.getDenseI64ArrayAttr(sizes));
  return parser.parseOptionalAttrDict(result.attributes);
}

void MeshOp::print(OpAsmPrinter &p) {
  p << " ";
  p.printSymbolName(getSymName());
  p << " [";
  llvm::interleaveComma(llvm::zip(getAxisNames(), getAxisSizes()), p,
                        [&](auto pair) {
                          p << cast<StringAttr>(std::get<0>(pair)).getValue()
                            << " = " << std::get<1>(pair);
                        });
  p << "]";
  p.printOptionalAttrDict(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getAxisNamesAttrName(), getAxisSizesAttrName()});
}

LogicalResult MeshOp::verify() {
  if (getAxisNames().size() != getAxisSizes().size())
    return emitOpError("has ") << getAxisNames().size() << " axis names but "
                               << getAxisSizes().size() << " sizes";
  if (getAxisNames().empty())
    return emitOpError("needs at least one axis");
  llvm::StringSet<> seen;
  for (auto [nameAttr, size] : llvm::zip(getAxisNames(), getAxisSizes())) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (name.empty())
      return emitOpError("has an axis with an empty name");
    if (!seen.insert(name).second)
      return emitOpError("duplicate axis name: ") << name;
    if (size <= 0)
      return emitOpError("axis '")
             << name << "' has size " << size << "; sizes must be positive";
  }
  return success();
}

int64_t MeshOp::getNumDevices() {
  int64_t n = 1;
  for (int64_t s : getAxisSizes())
    n *= s;
  return n;
}

int64_t MeshOp::getAxisIndex(StringRef name) {
  for (auto [i, a] : llvm::enumerate(getAxisNames()))
    if (cast<StringAttr>(a).getValue() == name)
      return i;
  return -1;
}

StringRef MeshOp::getAxisName(int64_t axis) {
  return cast<StringAttr>(getAxisNames()[axis]).getValue();
}

SmallVector<int64_t> MeshOp::getCoords(int64_t rank) {
  ArrayRef<int64_t> sizes = getAxisSizes();
  SmallVector<int64_t> coords(sizes.size());
  for (int64_t i = sizes.size() - 1; i >= 0; --i) {
    coords[i] = rank % sizes[i];
    rank /= sizes[i];
  }
  return coords;
}

int64_t MeshOp::getRank(ArrayRef<int64_t> coords) {
  int64_t rank = 0;
  for (auto [c, s] : llvm::zip(coords, getAxisSizes()))
    rank = rank * s + c;
  return rank;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static FailureOr<MeshOp> lookupMesh(Operation *op, FlatSymbolRefAttr ref,
                                    SymbolTableCollection &symbolTable) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, ref);
  if (!mesh)
    return op->emitOpError("refers to unknown mesh ") << ref;
  return mesh;
}

/// Resolves axis names to indices; reports unknown and repeated names.
static FailureOr<SmallVector<int64_t>> resolveAxes(Operation *op, MeshOp mesh,
                                                   ArrayAttr axes) {
  SmallVector<int64_t> indices;
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis");
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    int64_t idx = mesh.getAxisIndex(name);
    if (idx < 0)
      return op->emitOpError("mesh @")
             << mesh.getSymName() << " has no axis '" << name << "'";
    if (llvm::is_contained(indices, idx))
      return op->emitOpError("axis '") << name << "' is listed twice";
    indices.push_back(idx);
  }
  return indices;
}

static int64_t groupSize(MeshOp mesh, ArrayRef<int64_t> axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= mesh.getAxisSizes()[a];
  return n;
}

static LogicalResult checkDim(Operation *op, StringRef what, int64_t dim,
                              int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << what << " " << dim << " is out of range for a tensor of rank "
           << rank;
  return success();
}

static LogicalResult checkSameElementTypeAndRank(Operation *op,
                                                 RankedTensorType in,
                                                 RankedTensorType out) {
  if (in.getElementType() != out.getElementType())
    return op->emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getRank() != out.getRank())
    return op->emitOpError("changes the rank from ")
           << in.getRank() << " to " << out.getRank();
  return success();
}

/// `input` and `result` must agree on every dimension except `dim`.
static LogicalResult checkSameExceptDim(Operation *op, RankedTensorType in,
                                        RankedTensorType out, int64_t dim) {
  if (failed(checkSameElementTypeAndRank(op, in, out)))
    return failure();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (d == dim)
      continue;
    if (!ShapedType::isDynamic(in.getDimSize(d)) &&
        !ShapedType::isDynamic(out.getDimSize(d)) &&
        in.getDimSize(d) != out.getDimSize(d))
      return op->emitOpError("changes dimension ")
             << d << " from " << in.getDimSize(d) << " to " << out.getDimSize(d)
             << "; only dimension " << dim << " may change";
  }
  return success();
}

/// A collective that changes only dimension `dim` of its operand (`what`
/// names the dimension): all_gather, reduce_scatter, local_slice.
static LogicalResult verifyOneDim(Operation *op, StringRef what, int64_t dim) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = cast<RankedTensorType>(op->getResult(0).getType());
  if (failed(checkDim(op, what, dim, in.getRank())))
    return failure();
  return checkSameExceptDim(op, in, out, dim);
}

static int64_t sum(ArrayRef<int64_t> xs) {
  int64_t s = 0;
  for (int64_t x : xs)
    s += x;
  return s;
}

static LogicalResult checkSizes(Operation *op,
                                std::optional<ArrayRef<int64_t>> sizes,
                                int64_t group, StringRef what) {
  if (!sizes)
    return success();
  if (static_cast<int64_t>(sizes->size()) != group)
    return op->emitOpError()
           << what << " lists " << sizes->size()
           << " extents but the group has " << group << " members";
  for (int64_t s : *sizes)
    if (s < 0)
      return op->emitOpError() << what << " has a negative extent " << s;
  return success();
}

/// An optional per-member extent list of a collective and its name.
using SizesAttr = std::pair<std::optional<ArrayRef<int64_t>>, StringRef>;

/// The number of members of the group a collective runs over (`axes` of the
/// mesh `meshRef`), after checking the mesh, the axes and the op's extent
/// lists against it.
static FailureOr<int64_t> verifyGroup(Operation *op, FlatSymbolRefAttr meshRef,
                                      ArrayAttr axes, SymbolTableCollection &st,
                                      ArrayRef<SizesAttr> sizes = {}) {
  auto mesh = lookupMesh(op, meshRef, st);
  if (failed(mesh))
    return failure();
  auto indices = resolveAxes(op, *mesh, axes);
  if (failed(indices))
    return failure();
  int64_t n = groupSize(*mesh, *indices);
  for (auto [list, name] : sizes)
    if (failed(checkSizes(op, list, n, name)))
      return failure();
  return n;
}

/// Whether `n` pieces, of extents `sizes` or else of `piece` each, make up
/// a whole of extent `whole`; unknown extents fit.
static bool piecesFit(int64_t whole, int64_t piece, int64_t n,
                      std::optional<ArrayRef<int64_t>> sizes) {
  if (ShapedType::isDynamic(whole))
    return true;
  if (sizes)
    return sum(*sizes) == whole;
  return ShapedType::isDynamic(piece) || piece * n == whole;
}

template <typename OpT>
SmallVector<int64_t> collectiveAxisIndices(OpT op, MeshOp mesh) {
  SmallVector<int64_t> out;
  for (Attribute a : op.getAxes())
    out.push_back(mesh.getAxisIndex(cast<StringAttr>(a).getValue()));
  return out;
}

//===----------------------------------------------------------------------===//
// AnnotateOp / ReshardOp
//===----------------------------------------------------------------------===//

LogicalResult AnnotateOp::verify() {
  int64_t priority = getPriorityAttr().getInt();
  if (priority < 0)
    return emitOpError("priority must be non-negative, got ") << priority;
  return success();
}

LogicalResult AnnotateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto mesh = lookupMesh(*this, getSharding().getMesh(), symbolTable);
  if (failed(mesh))
    return failure();
  return getSharding().verifyFor([&] { return emitOpError(); },
                                 getInput().getType().getRank(), *mesh,
                                 getInput().getType().getShape());
}

LogicalResult ReshardOp::verify() {
  auto in = getInput().getType();
  if (failed(checkSameElementTypeAndRank(*this, in, getResult().getType())))
    return failure();
  if (getFrom().getMesh() != getTo().getMesh())
    return emitOpError("moves between meshes ")
           << getFrom().getMesh() << " and " << getTo().getMesh()
           << "; resharding works within one mesh";
  if (auto global = getGlobalType()) {
    auto g = dyn_cast<RankedTensorType>(*global);
    if (!g || g.getRank() != in.getRank())
      return emitOpError("global_type must be a ranked tensor of rank ")
             << in.getRank();
  }
  return success();
}

LogicalResult ReshardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto mesh = lookupMesh(*this, getFrom().getMesh(), symbolTable);
  if (failed(mesh))
    return failure();
  int64_t rank = getInput().getType().getRank();
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  if (auto global = getGlobalType())
    if (auto g = dyn_cast<RankedTensorType>(*global))
      shape = g.getShape();
  if (failed(getFrom().verifyFor([&] { return emitOpError("source: "); }, rank,
                                 *mesh, shape)) ||
      failed(getTo().verifyFor([&] { return emitOpError("target: "); }, rank,
                               *mesh, shape)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

#define DEFINE_AXIS_INDICES(OP)                                                \
  SmallVector<int64_t> OP::getAxisIndices(MeshOp mesh) {                       \
    return collectiveAxisIndices(*this, mesh);                                 \
  }
DEFINE_AXIS_INDICES(AllGatherOp)
DEFINE_AXIS_INDICES(AllReduceOp)
DEFINE_AXIS_INDICES(ReduceScatterOp)
DEFINE_AXIS_INDICES(AllToAllOp)
DEFINE_AXIS_INDICES(LocalSliceOp)
DEFINE_AXIS_INDICES(CollectivePermuteOp)
DEFINE_AXIS_INDICES(ToPartialOp)
#undef DEFINE_AXIS_INDICES

LogicalResult AllGatherOp::verify() {
  return verifyOneDim(*this, "gather dimension", getGatherDim());
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &st) {
  FailureOr<int64_t> n =
      verifyGroup(*this, getMeshAttr(), getAxes(), st, {{getSizes(), "sizes"}});
  if (failed(n))
    return failure();
  int64_t d = getGatherDim();
  int64_t inExt = getInput().getType().getDimSize(d);
  int64_t outExt = getResult().getType().getDimSize(d);
  if (piecesFit(outExt, inExt, *n, getSizes()))
    return success();
  if (auto sizes = getSizes())
    return emitOpError("gathers pieces of total extent ")
           << sum(*sizes) << " into a result of extent " << outExt
           << " along dimension " << d;
  return emitOpError("gathers ")
         << *n << " pieces of extent " << inExt << " along dimension " << d
         << " but the result has extent " << outExt;
}

LogicalResult AllReduceOp::verify() { return success(); }

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &st) {
  return verifyGroup(*this, getMeshAttr(), getAxes(), st);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyOneDim(*this, "scatter dimension", getScatterDim());
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &st) {
  FailureOr<int64_t> n =
      verifyGroup(*this, getMeshAttr(), getAxes(), st, {{getSizes(), "sizes"}});
  if (failed(n))
    return failure();
  int64_t d = getScatterDim();
  int64_t inExt = getInput().getType().getDimSize(d);
  int64_t outExt = getResult().getType().getDimSize(d);
  if (piecesFit(inExt, outExt, *n, getSizes()))
    return success();
  if (auto sizes = getSizes())
    return emitOpError("scatters an extent of ")
           << inExt << " into pieces of total extent " << sum(*sizes);
  return emitOpError("scatters extent ")
         << inExt << " along dimension " << d << " over " << *n
         << " members but the result has extent " << outExt;
}

LogicalResult AllToAllOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  if (failed(checkDim(*this, "split dimension", getSplitDim(), in.getRank())) ||
      failed(checkDim(*this, "concat dimension", getConcatDim(), in.getRank())))
    return failure();
  if (getSplitDim() == getConcatDim())
    return emitOpError("splits and concatenates the same dimension ")
           << getSplitDim() << "; that is a no-op";
  if (in.getElementType() != out.getElementType() ||
      in.getRank() != out.getRank())
    return emitOpError("must keep the element type and rank");
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (d == getSplitDim() || d == getConcatDim())
      continue;
    if (!ShapedType::isDynamic(in.getDimSize(d)) &&
        !ShapedType::isDynamic(out.getDimSize(d)) &&
        in.getDimSize(d) != out.getDimSize(d))
      return emitOpError("changes dimension ") << d;
  }
  return success();
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &st) {
  FailureOr<int64_t> n = verifyGroup(
      *this, getMeshAttr(), getAxes(), st,
      {{getSplitSizes(), "split_sizes"}, {getConcatSizes(), "concat_sizes"}});
  if (failed(n))
    return failure();
  auto in = getInput().getType();
  auto out = getResult().getType();
  int64_t s = getSplitDim(), c = getConcatDim();
  if (getSplitSizes() || getConcatSizes() || !in.hasStaticShape() ||
      !out.hasStaticShape())
    return success();
  if (!piecesFit(in.getDimSize(s), out.getDimSize(s), *n, std::nullopt) ||
      !piecesFit(out.getDimSize(c), in.getDimSize(c), *n, std::nullopt))
    return emitOpError("with ")
           << *n << " members must divide dimension " << s << " by " << *n
           << " and multiply dimension " << c << " by " << *n;
  return success();
}

LogicalResult LocalSliceOp::verify() {
  return verifyOneDim(*this, "dimension", getDim());
}

LogicalResult LocalSliceOp::verifySymbolUses(SymbolTableCollection &st) {
  FailureOr<int64_t> n =
      verifyGroup(*this, getMeshAttr(), getAxes(), st, {{getSizes(), "sizes"}});
  if (failed(n))
    return failure();
  int64_t inExt = getInput().getType().getDimSize(getDim());
  int64_t outExt = getResult().getType().getDimSize(getDim());
  // Explicit sizes are not checked against the input's extent.
  if (!getSizes() && !piecesFit(inExt, outExt, *n, std::nullopt))
    return emitOpError("keeps a piece of extent ")
           << outExt << " of " << inExt << ", which is not 1/" << *n;
  return success();
}

LogicalResult CollectivePermuteOp::verify() {
  ArrayRef<int64_t> pairs = getPairs();
  if (pairs.size() % 2 != 0)
    return emitOpError("pairs must list (source, target) positions, got an odd "
                       "count ")
           << pairs.size();
  return success();
}

LogicalResult CollectivePermuteOp::verifySymbolUses(SymbolTableCollection &st) {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes(), st);
  if (failed(group))
    return failure();
  int64_t n = *group;
  ArrayRef<int64_t> pairs = getPairs();
  SmallVector<bool> isSource(n, false), isTarget(n, false);
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    int64_t s = pairs[i], t = pairs[i + 1];
    if (s < 0 || s >= n || t < 0 || t >= n)
      return emitOpError("pair (")
             << s << ", " << t << ") is outside a group of " << n << " members";
    if (isSource[s])
      return emitOpError("position ") << s << " sends twice";
    if (isTarget[t])
      return emitOpError("position ") << t << " receives twice";
    isSource[s] = isTarget[t] = true;
  }
  return success();
}

LogicalResult ToPartialOp::verifySymbolUses(SymbolTableCollection &st) {
  return verifyGroup(*this, getMeshAttr(), getAxes(), st);
}

LogicalResult PieceOffsetOp::verifySymbolUses(SymbolTableCollection &st) {
  auto mesh = lookupMesh(*this, getSharding().getMesh(), st);
  if (failed(mesh))
    return failure();
  return getSharding().verifyFor([&] { return emitOpError(); },
                                 getDimAttr().getInt() + 1, *mesh);
}

//===----------------------------------------------------------------------===//
// Send / Recv
//===----------------------------------------------------------------------===//

static LogicalResult verifyPeer(Operation *op, FlatSymbolRefAttr meshRef,
                                StringRef axis, int64_t peer,
                                SymbolTableCollection &st) {
  auto mesh = lookupMesh(op, meshRef, st);
  if (failed(mesh))
    return failure();
  int64_t idx = mesh->getAxisIndex(axis);
  if (idx < 0)
    return op->emitOpError("mesh @")
           << mesh->getSymName() << " has no axis '" << axis << "'";
  int64_t size = mesh->getAxisSizes()[idx];
  if (peer < 0 || peer >= size)
    return op->emitOpError("peer ")
           << peer << " is outside axis '" << axis << "' of size " << size;
  return success();
}

LogicalResult SendOp::verify() {
  if (getTag() < 0)
    return emitOpError("tag must be non-negative");
  return success();
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &st) {
  return verifyPeer(*this, getMeshAttr(), getAxis(), getPeer(), st);
}

LogicalResult RecvOp::verify() {
  if (getTag() < 0)
    return emitOpError("tag must be non-negative");
  if (!getResult().getType().hasStaticShape())
    return emitOpError("needs a static shape to receive into");
  return success();
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &st) {
  return verifyPeer(*this, getMeshAttr(), getAxis(), getPeer(), st);
}

#define GET_OP_CLASSES
#include "distopt/Dialect/Dist/IR/DistOps.cpp.inc"
