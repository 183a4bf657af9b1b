//===- ExternalModels.cpp - sharding rules for upstream dialects -*- C++
//-*-===//
#include "distopt/Dialect/Dist/ExternalModels/ExternalModels.h"

void distopt::dist::registerExternalModels(mlir::DialectRegistry &registry) {
  registerLinalgShardingRules(registry);
  registerTensorShardingRules(registry);
  registerTosaShardingRules(registry);
  registerArithShardingRules(registry);
}
