//===- StagePairingTest.cpp - the compile-time send/recv check --*- C++ -*-===//
#include "distopt/InitAll.h"
#include "distopt/PipelineStages/StageCut.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace distopt;

namespace {

class StagePairingTest : public ::testing::Test {
protected:
  void SetUp() override {
    registerAllDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }
  mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &body) {
    std::string text = "dist.mesh @mesh [pp = 2]\nfunc.func @main(" + body;
    return mlir::parseSourceString<mlir::ModuleOp>(text, ctx.get());
  }
  /// The check's diagnostic, or "" when the stages pair up.
  std::string check(const std::string &stage0, const std::string &stage1) {
    auto m0 = parse(stage0), m1 = parse(stage1);
    EXPECT_TRUE(m0 && m1);
    std::string message;
    mlir::ScopedDiagnosticHandler handler(ctx.get(), [&](mlir::Diagnostic &d) {
      message = d.str();
      return mlir::success();
    });
    mlir::ModuleOp modules[] = {*m0, *m1};
    bool ok = succeeded(verifyStagePairing(modules));
    EXPECT_EQ(ok, message.empty());
    return message;
  }

  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> ctx;
};

const char *kSendsInOrder =
    R"(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  dist.send %a on @mesh axis "pp" to 1 tag 0 : tensor<4xf32>
  dist.send %b on @mesh axis "pp" to 1 tag 1 : tensor<8xf32>
  return
})";

TEST_F(StagePairingTest, MatchingTagsAndTypesInOrderPass) {
  EXPECT_EQ(check(kSendsInOrder, R"() {
  %0 = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
  %1 = dist.recv on @mesh axis "pp" from 0 tag 1 : tensor<8xf32>
  return
})"),
            "");
}

TEST_F(StagePairingTest, ReceivesInAnotherOrderPair) {
  // Messages are matched by peer and tag, not by their order.
  EXPECT_EQ(check(kSendsInOrder, R"() {
  %1 = dist.recv on @mesh axis "pp" from 0 tag 1 : tensor<8xf32>
  %0 = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
  return
})"),
            "");
}

TEST_F(StagePairingTest, AMissingReceiveIsRefused) {
  EXPECT_EQ(check(kSendsInOrder, R"() {
  %0 = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
  return
})"),
            "pipeline: stage 0 sends tag 1 to stage 1, which never receives "
            "it");
}

TEST_F(StagePairingTest, AReceiveNobodySendsIsRefused) {
  EXPECT_EQ(check(R"() {
  return
})",
                  R"() {
  %0 = dist.recv on @mesh axis "pp" from 0 tag 3 : tensor<4xf32>
  return
})"),
            "pipeline: stage 1 receives tag 3 from stage 0, which never sends "
            "it");
}

TEST_F(StagePairingTest, DifferentTypesAreRefused) {
  EXPECT_NE(check(kSendsInOrder, R"() {
  %0 = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
  %1 = dist.recv on @mesh axis "pp" from 0 tag 1 : tensor<4xf32>
  return
})")
                .find("sends tag 1 ('tensor<8xf32>') to stage 1, which expects "
                      "'tensor<4xf32>' there"),
            std::string::npos);
}

} // namespace
