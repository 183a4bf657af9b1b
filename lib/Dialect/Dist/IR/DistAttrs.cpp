//===- DistAttrs.cpp - the sharding attribute -------------------*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/DistAttrs.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt::dist;

#include "distopt/Dialect/Dist/IR/DistEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "distopt/Dialect/Dist/IR/DistAttrs.cpp.inc"

void DistDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "distopt/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

std::string Placement::str() const {
  switch (kind) {
  case Kind::Open:
    return "?";
  case Kind::Replicate:
    return "R";
  case Kind::Shard: {
    std::string s = "S(" + std::to_string(dim);
    if (sizes) {
      s += ", sizes=[";
      for (auto [i, v] : llvm::enumerate(sizes.asArrayRef()))
        s += (i ? ", " : "") + std::to_string(v);
      s += "]";
    }
    return s + ")";
  }
  case Kind::Partial:
    return "P(" + stringifyReductionKind(reduction).str() + ")";
  }
  return "?";
}

static ParseResult parsePlacement(AsmParser &parser, Placement &out) {
  if (succeeded(parser.parseOptionalQuestion())) {
    out = Placement::open();
    return success();
  }
  SMLoc loc = parser.getCurrentLocation();
  StringRef kw;
  if (parser.parseKeyword(&kw))
    return failure();
  if (kw == "R" || kw == "Replicate") {
    out = Placement::replicate();
    return success();
  }
  if (kw == "S" || kw == "Shard") {
    int64_t dim;
    if (parser.parseLParen() || parser.parseInteger(dim))
      return failure();
    if (dim < 0)
      return parser.emitError(loc, "shard dimension must be non-negative, got ")
             << dim;
    DenseI64ArrayAttr sizes;
    if (succeeded(parser.parseOptionalComma())) {
      SmallVector<int64_t> values;
      if (parser.parseKeyword("sizes") || parser.parseEqual() ||
          parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                         [&]() -> ParseResult {
                                           int64_t v;
                                           if (parser.parseInteger(v))
                                             return failure();
                                           values.push_back(v);
                                           return success();
                                         }))
        return failure();
      sizes = DenseI64ArrayAttr::get(parser.getContext(), values);
    }
    if (parser.parseRParen())
      return failure();
    out = Placement::shard(dim, sizes);
    return success();
  }
  if (kw == "P" || kw == "Partial") {
    StringRef red;
    SMLoc redLoc;
    if (parser.parseLParen())
      return failure();
    redLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&red) || parser.parseRParen())
      return failure();
    auto kind = symbolizeReductionKind(red);
    if (!kind)
      return parser.emitError(redLoc, "unknown reduction '")
             << red << "'; expected sum, max, min or avg";
    out = Placement::partial(*kind);
    return success();
  }
  return parser.emitError(loc, "unknown placement '")
         << kw << "'; expected S(dim), R, P(reduction) or ?";
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<Placement> placements;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        Placement p;
        if (parsePlacement(parser, p))
          return failure();
        placements.push_back(p);
        return success();
      }))
    return {};
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(parser.getContext(), mesh, placements);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getPlacements(), printer,
                        [&](const Placement &p) { printer << p.str(); });
  printer << "]>";
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh,
                                   ArrayRef<Placement> placements) {
  if (!mesh)
    return emitError() << "sharding needs a mesh";
  for (auto [axis, p] : llvm::enumerate(placements)) {
    if (p.isShard() && p.dim < 0)
      return emitError() << "shard dimension must be non-negative, got "
                         << p.dim;
    if (!p.hasSizes())
      continue;
    if (p.sizes.empty() ||
        llvm::any_of(p.sizes.asArrayRef(), [](int64_t v) { return v < 0; }))
      return emitError() << "piece sizes of " << p.str()
                         << " must be non-negative, one per device";
    for (auto [other, q] : llvm::enumerate(placements))
      if (other != axis && q.isShardOf(p.dim))
        return emitError() << "dimension " << p.dim
                           << " has explicit piece sizes on one mesh axis "
                              "and is split by another too; sizes work "
                              "when one axis splits the dimension";
  }
  return success();
}

LogicalResult
ShardingAttr::verifyFor(function_ref<InFlightDiagnostic()> emitError,
                        int64_t tensorRank, MeshOp mesh,
                        std::optional<ArrayRef<int64_t>> globalShape) const {
  ArrayRef<Placement> placements = getPlacements();
  if (static_cast<int64_t>(placements.size()) != mesh.getNumAxes()) {
    InFlightDiagnostic diag = emitError();
    diag << "sharding " << *this << " has " << placements.size()
         << " placements but mesh @" << mesh.getSymName() << " has "
         << mesh.getNumAxes() << " axes (";
    llvm::interleaveComma(mesh.getAxisNames(), diag, [&](Attribute a) {
      diag << cast<StringAttr>(a).getValue();
    });
    return diag << ")";
  }
  for (auto [axis, p] : llvm::enumerate(placements)) {
    if (p.isShard() && p.dim >= tensorRank)
      return emitError() << "sharding " << *this << " shards dimension "
                         << p.dim << " on mesh axis '" << mesh.getAxisName(axis)
                         << "', but the tensor has rank " << tensorRank;
    if (!p.hasSizes())
      continue;
    int64_t devices = mesh.getAxisSizes()[axis];
    if (static_cast<int64_t>(p.sizes.size()) != devices)
      return emitError() << p.str() << " gives " << p.sizes.size()
                         << " piece sizes but mesh axis '"
                         << mesh.getAxisName(axis) << "' has " << devices
                         << " devices";
    if (!globalShape || p.dim >= static_cast<int64_t>(globalShape->size()))
      continue;
    int64_t extent = (*globalShape)[p.dim];
    int64_t sum = 0;
    for (int64_t v : p.sizes.asArrayRef())
      sum += v;
    if (!ShapedType::isDynamic(extent) && sum != extent)
      return emitError() << p.str() << ": the piece sizes add up to " << sum
                         << " but dimension " << p.dim << " has " << extent;
  }
  return success();
}

SmallVector<int64_t> ShardingAttr::getAxesForDim(int64_t dim) const {
  SmallVector<int64_t> axes;
  for (auto [axis, p] : llvm::enumerate(getPlacements()))
    if (p.isShardOf(dim))
      axes.push_back(axis);
  return axes;
}

bool ShardingAttr::isFullyDecided() const {
  return llvm::none_of(getPlacements(),
                       [](const Placement &p) { return p.isOpen(); });
}

bool ShardingAttr::isReplicated() const {
  return llvm::all_of(getPlacements(),
                      [](const Placement &p) { return p.isReplicateOrOpen(); });
}

bool ShardingAttr::hasPartial() const {
  return llvm::any_of(getPlacements(),
                      [](const Placement &p) { return p.isPartial(); });
}

ShardingAttr ShardingAttr::withPlacement(int64_t axis, Placement p) const {
  SmallVector<Placement> placements(getPlacements());
  placements[axis] = p;
  return ShardingAttr::get(getContext(), getMesh(), placements);
}

ShardingAttr ShardingAttr::getReplicated(MLIRContext *ctx,
                                         FlatSymbolRefAttr mesh,
                                         int64_t numAxes) {
  SmallVector<Placement> placements(numAxes, Placement::replicate());
  return ShardingAttr::get(ctx, mesh, placements);
}

ShardingAttr ShardingAttr::getOpen(MLIRContext *ctx, FlatSymbolRefAttr mesh,
                                   int64_t numAxes) {
  SmallVector<Placement> placements(numAxes, Placement::open());
  return ShardingAttr::get(ctx, mesh, placements);
}
