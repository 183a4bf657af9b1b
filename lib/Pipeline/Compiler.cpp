//===- Compiler.cpp - from a model file to per-rank modules -----*- C++ -*-===//
#include "distopt/Pipeline/Compiler.h"
#include "distopt/Import/OnnxImporter.h"
#include "distopt/InitAll.h"
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace distopt;

llvm::Expected<std::vector<MeshAxis>> distopt::parseMeshSpec(StringRef spec) {
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
      return llvm::createStringError(
          "bad mesh axis '" + part.str() +
          "' in --mesh: expected name=size, e.g. --mesh dp=2,tp=4");
    if (n <= 0)
      return llvm::createStringError("mesh axis '" + name.str() +
                                     "' has size " + std::to_string(n) +
                                     "; sizes must be positive");
    for (const MeshAxis &a : axes)
      if (a.name == name)
        return llvm::createStringError("mesh axis '" + name.str() +
                                       "' appears twice in --mesh");
    axes.push_back({name.str(), n});
  }
  return axes;
}

llvm::Expected<llvm::StringMap<int64_t>> distopt::parseDimSpec(StringRef spec) {
  llvm::StringMap<int64_t> dims;
  SmallVector<StringRef> parts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    auto [name, value] = part.trim().split('=');
    int64_t n = 0;
    if (name.trim().empty() || value.trim().getAsInteger(10, n) || n <= 0)
      return llvm::createStringError("bad dimension binding '" + part.str() +
                                     "' in --dim: expected name=positive-size, "
                                     "e.g. --dim batch=2,seq=128");
    dims[name.trim()] = n;
  }
  return dims;
}

OwningOpRef<ModuleOp> distopt::loadModel(MLIRContext &ctx, StringRef path,
                                         const CompileOptions &options) {
  if (path.ends_with(".onnx")) {
    ImportOptions importOptions;
    for (auto &entry : options.dims)
      importOptions.dims[entry.getKey()] = entry.getValue();
    importOptions.inputValues = options.inputValues;
    return importOnnxModel(ctx, path, importOptions);
  }
  ParserConfig config(&ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, config);
  if (module && !(*module)->hasAttr("nn.model_path"))
    (*module)->setAttr("nn.model_path", StringAttr::get(&ctx, path));
  if (module && options.singleDevice)
    stripDistribution(*module);
  return module;
}

void distopt::stripDistribution(ModuleOp module) {
  module.walk([](dist::AnnotateOp op) {
    op.getResult().replaceAllUsesWith(op.getInput());
    op.erase();
  });
  for (dist::MeshOp mesh :
       llvm::make_early_inc_range(module.getOps<dist::MeshOp>()))
    mesh.erase();
  module.walk([](Operation *op) {
    op->removeAttr("dist.sharding");
    op->removeAttr("dist.cause");
  });
}

LogicalResult distopt::setMesh(ModuleOp module, StringRef spec) {
  if (spec.empty())
    return success();
  auto axes = parseMeshSpec(spec);
  if (!axes)
    return module.emitError(llvm::toString(axes.takeError()));
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
             << mesh.getSymName() << " which differs from --mesh " << spec;
    return success();
  }
  OpBuilder ob(module.getBodyRegion());
  ob.setInsertionPointToStart(module.getBody());
  dist::MeshOp::create(ob, module.getLoc(), "mesh", b.getArrayAttr(names),
                       b.getDenseI64ArrayAttr(sizes));
  return success();
}

int64_t distopt::numDevices(ModuleOp module) {
  auto meshes = module.getOps<dist::MeshOp>();
  if (meshes.empty())
    return 1;
  return (*meshes.begin()).getNumDevices();
}

LogicalResult distopt::applyPlans(ModuleOp module,
                                  const std::vector<std::string> &plans) {
  for (const std::string &plan : plans)
    if (failed(applyPlan(module, plan)))
      return failure();
  return success();
}

LogicalResult distopt::shardModule(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(dist::createDistPropagateSharding());
  pm.addPass(dist::createDistInsertReshards());
  pm.addPass(createCSEPass());
  return pm.run(module);
}

OwningOpRef<ModuleOp> distopt::partitionForRank(ModuleOp sharded,
                                                int64_t rank) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(sharded->clone()));
  PassManager pm(sharded.getContext());
  dist::DistPartitionOptions partition;
  partition.rank = rank;
  pm.addPass(dist::createDistPartition(partition));
  dist::DistReshardToCollectivesOptions lower;
  lower.rank = rank;
  pm.addPass(dist::createDistReshardToCollectives(lower));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

std::string distopt::weightDirectory(ModuleOp module, StringRef modelPath) {
  StringRef path = modelPath;
  if (auto attr = module->getAttrOfType<StringAttr>("nn.model_path"))
    path = attr.getValue();
  SmallString<256> dir(llvm::sys::path::parent_path(path));
  if (dir.empty())
    dir = ".";
  llvm::sys::fs::make_absolute(dir);
  return dir.str().str();
}
