//===- MeshSpec.cpp - the device mesh a plan splits over --------*- C++ -*-===//
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt;

llvm::Expected<std::vector<MeshAxis>> distopt::parseMeshSpec(StringRef spec,
                                                             StringRef flag) {
  // The tools' flag reads "--mesh dp=2,tp=4", a pass option "mesh=dp=2,tp=4".
  bool isFlag = flag.starts_with("-");
  std::string where = isFlag ? flag.str() : "the " + flag.str() + " option";
  std::string example = flag.str() + (isFlag ? " " : "=") + "dp=2,tp=4";
  std::vector<MeshAxis> axes;
  SmallVector<StringRef> parts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/true);
  for (StringRef part : parts) {
    part = part.trim();
    auto [name, size] = part.split('=');
    name = name.trim();
    size = size.trim();
    int64_t n = 0;
    if (name.empty() || size.empty() || size.getAsInteger(10, n))
      return llvm::createStringError("bad mesh axis '" + part.str() + "' in " +
                                     where + ": expected name=size, e.g. " +
                                     example);
    if (n <= 0)
      return llvm::createStringError("mesh axis '" + name.str() +
                                     "' has size " + std::to_string(n) +
                                     "; sizes must be positive");
    for (const MeshAxis &a : axes)
      if (a.name == name)
        return llvm::createStringError("mesh axis '" + name.str() +
                                       "' appears twice in " + where);
    axes.push_back({name.str(), n});
  }
  return axes;
}

LogicalResult distopt::declareMesh(ModuleOp module, StringRef spec,
                                   StringRef flag) {
  if (spec.empty())
    return success();
  auto axes = parseMeshSpec(spec, flag);
  if (!axes)
    return emitError(UnknownLoc::get(module.getContext()))
           << llvm::toString(axes.takeError());
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  Builder b(module.getContext());
  for (const MeshAxis &a : *axes) {
    names.push_back(b.getStringAttr(a.name));
    sizes.push_back(a.size);
  }
  auto existing = module.getOps<dist::MeshOp>();
  if (!existing.empty()) {
    dist::MeshOp mesh = *existing.begin();
    if (mesh.getAxisNames() != b.getArrayAttr(names) ||
        mesh.getAxisSizes() != ArrayRef<int64_t>(sizes))
      return mesh.emitError("the model declares mesh @")
             << mesh.getSymName() << " which differs from "
             << (flag.starts_with("-") ? flag.str() + " " : flag.str() + "=")
             << spec;
    return success();
  }
  OpBuilder ob(module.getBodyRegion());
  ob.setInsertionPointToStart(module.getBody());
  dist::MeshOp::create(ob, module.getLoc(), "mesh", b.getArrayAttr(names),
                       b.getDenseI64ArrayAttr(sizes));
  return success();
}
