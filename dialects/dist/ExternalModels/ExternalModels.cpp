//===- ExternalModels.cpp - sharding rules for upstream dialects -*- C++ -*-===//
#include "dist/ExternalModels/ExternalModels.h"

void distopt::dist::registerExternalModels(mlir::DialectRegistry &registry) {
  registerLinalgShardingRules(registry);
  registerTensorShardingRules(registry);
  registerTosaShardingRules(registry);
  registerArithShardingRules(registry);
}
