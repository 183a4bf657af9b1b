//===- SixteenBitModel.cpp - a bf16 or f16 model trains from f32 masters --===//
//
// A model exported in bf16 or f16 (torch's `model.to(torch.bfloat16)`) holds
// its parameters in 16 bits. Updating them in 16 bits loses every update
// smaller than half an ulp of the weight (a learning rate of 1e-4 moves
// nothing), so the training step is built from an f32 copy of the model:
// each parameter becomes an f32 master read from its 16-bit bytes (widened
// exactly at load), and the precision policy then computes in the model's
// dtype again where it says so. See docs/training.md, "16-bit models".
//
//===----------------------------------------------------------------------===//
#include "distopt/Training/TrainingStep.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace distopt;

static bool isSixteenBitFloat(Type t) { return t.isF16() || t.isBF16(); }

static Type sixteenBitElement(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && isSixteenBitFloat(tt.getElementType()) ? tt.getElementType()
                                                      : Type();
}

static Type widened(Type t) {
  if (!sixteenBitElement(t))
    return t;
  auto tt = cast<RankedTensorType>(t);
  return tt.clone(Float32Type::get(t.getContext()));
}

Type distopt::sixteenBitParameterType(func::FuncOp func) {
  Type found;
  func.walk([&](nn::WeightOp w) {
    if (Type e = sixteenBitElement(w.getType())) {
      found = e;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

LogicalResult distopt::widenSixteenBitModel(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  Type f32 = Float32Type::get(ctx);
  OpBuilder b(ctx);
  // The program's inputs keep the model's dtype (the data is in it); one
  // cast each widens them.
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    if (!sixteenBitElement(arg.getType()) || arg.use_empty())
      continue;
    Value wide = nn::CastOp::create(b, arg.getLoc(), widened(arg.getType()),
                                    arg);
    arg.replaceAllUsesExcept(wide, wide.getDefiningOp());
  }
  WalkResult result = func.walk([&](Operation *op) -> WalkResult {
    if (op == func.getOperation())
      return WalkResult::advance();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(widened(arg.getType()));
    if (auto w = dyn_cast<nn::WeightOp>(op)) {
      if (Type e = sixteenBitElement(w.getType())) {
        w.setStoredTypeAttr(TypeAttr::get(e));
        w.getResult().setType(cast<RankedTensorType>(widened(w.getType())));
      }
      return WalkResult::advance();
    }
    if (auto c = dyn_cast<nn::ConstantOp>(op)) {
      if (!sixteenBitElement(c.getType()))
        return WalkResult::advance();
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense)
        return op->emitError("a 16-bit constant that is not dense elements "
                             "cannot be widened for training");
      auto type = cast<RankedTensorType>(widened(c.getType()));
      // Every 16-bit float is exactly an f32.
      auto wide = dense.mapValues(f32, [](const APFloat &v) {
        bool lost;
        APFloat f = v;
        f.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
        return f.bitcastToAPInt();
      });
      c.setValueAttr(wide);
      c.getResult().setType(type);
      return WalkResult::advance();
    }
    for (Value r : op->getResults())
      r.setType(widened(r.getType()));
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  // A cast the export made between f32 and the model's dtype is now a cast
  // from f32 to f32.
  func.walk([&](nn::CastOp cast) {
    if (cast.getType() == cast.getInput().getType()) {
      cast.getResult().replaceAllUsesWith(cast.getInput());
      cast.erase();
    }
  });
  auto results = entry.getTerminator()->getOperandTypes();
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(),
                                 SmallVector<Type>(results)));
  return success();
}
