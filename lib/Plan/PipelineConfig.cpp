//===- PipelineConfig.cpp - the pipeline a plan asks for --------*- C++ -*-===//
#include "distopt/Plan/PipelineConfig.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt;

std::optional<PipelineConfig> distopt::getPipelineConfig(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>("dist.pipeline");
  if (!dict)
    return std::nullopt;
  PipelineConfig c;
  if (auto a = dict.getAs<StringAttr>("axis"))
    c.axis = a.str();
  if (auto a = dict.getAs<StringAttr>("split"))
    c.split = a.str();
  if (auto a = dict.getAs<IntegerAttr>("microbatches"))
    c.microbatches = a.getInt();
  if (auto a = dict.getAs<StringAttr>("schedule"))
    c.schedule = a.str();
  return c;
}

void distopt::setPipelineConfig(ModuleOp module, const PipelineConfig &c) {
  Builder b(module.getContext());
  module->setAttr(
      "dist.pipeline",
      b.getDictionaryAttr({
          b.getNamedAttr("axis", b.getStringAttr(c.axis)),
          b.getNamedAttr("split", b.getStringAttr(c.split)),
          b.getNamedAttr("microbatches", b.getI64IntegerAttr(c.microbatches)),
          b.getNamedAttr("schedule", b.getStringAttr(c.schedule)),
      }));
}
