//===- GradientCheckTest.cpp - every gradient rule vs finite differences --===//
//
// For each differentiable nn op: loss = sum(op(x...) * c) with random f64
// inputs; the gradients the op's rule builds (through buildGradients, the
// same walk training uses), compiled and run by distrt, must equal central
// finite differences of the loss in every element. The same rules run in
// bf16 and f16 must match the f64 finite differences within a few roundings
// of their dtype.
//
//===----------------------------------------------------------------------===//
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/InitAll.h"
#include "distopt/Session/ProgramInputs.h"
#include "distopt/Session/Session.h"
#include "distopt/Training/Backward.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "../support/CompilerTestContext.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace distopt;

namespace {

struct Case {
  std::string name;
  /// Arguments as "%name: type" and whether each must stay positive.
  std::vector<std::pair<std::string, bool>> args;
  /// The op, defining %y from the arguments.
  std::string op;
  std::string resultType;
};

std::ostream &operator<<(std::ostream &os, const Case &c) {
  return os << c.name;
}

/// The case's op applied in `storage` ("f64", or a 16-bit float type: then
/// the f64 arguments are rounded to it on entry and the result widened
/// back, so that the op and its gradient rule run in that dtype):
/// loss = sum(op(x...) * c).
std::string loss(const Case &c, const std::string &storage) {
  std::string t = c.resultType;
  // rank of the result type, for the reduction's axes
  int rank = 0;
  for (char ch : t)
    rank += ch == 'x';
  std::string axes;
  for (int d = 0; d < rank; ++d)
    axes += (d ? ", " : "") + std::to_string(d);
  auto narrow = [&](std::string type) {
    for (size_t at; (at = type.find("f64>")) != std::string::npos;)
      type.replace(at, 3, storage);
    return type;
  };
  bool cast = storage != "f64";
  std::string text = "func.func @main(", entry;
  for (auto &[a, positive] : c.args) {
    std::string name = a.substr(0, a.find(':')), type = a.substr(a.find(':') + 2);
    if (!cast || type.find("f64>") == std::string::npos) {
      text += a + ", ";
      continue;
    }
    text += name + "_f64: " + type + ", ";
    entry += "  " + name + " = nn.cast " + name + "_f64 : " + type + " -> " + narrow(type) + "\n";
  }
  text += "%c: " + t + ") -> tensor<f64> {\n" + entry + "  " + (cast ? narrow(c.op) : c.op) + "\n";
  if (cast)
    text += "  %y_f64 = nn.cast %y : " + narrow(t) + " -> " + t + "\n";
  text += std::string("  %m = nn.mul ") + (cast ? "%y_f64" : "%y") + ", %c : " + t + ", " + t +
          " -> " + t + "\n";
  if (rank == 0)
    text += "  return %m : tensor<f64>\n}\n";
  else
    text += "  %l = nn.reduce_sum %m axes [" + axes + "] : " + t +
            " -> tensor<f64>\n  return %l : tensor<f64>\n}\n";
  return text;
}

/// Builds, compiles and runs a case's loss with its gradients.
class GradientCheckBase : public ::testing::Test {
protected:
  distopt::testing::CompilerTestContext env{"gradcheck",
                                            /*allSeverities=*/true};
  mlir::MLIRContext *ctx = &env.context();
  std::string &diagnostics = env.diagnostics;
  const llvm::SmallString<128> &dir = env.dir;

  /// The loss and its gradients with respect to every float argument but
  /// the weighting %c, compiled into `programs`; `numGradients` of them.
  void compileWithGradients(const Case &c, const std::string &storage, Programs &programs,
                            size_t &numGradients) {
    std::string text = loss(c, storage);
    SCOPED_TRACE(text);
    auto module = mlir::parseSourceString<mlir::ModuleOp>(text, ctx);
    ASSERT_TRUE(module) << diagnostics;
    auto func = *module->getOps<mlir::func::FuncOp>().begin();
    mlir::Block &body = func.getBody().front();
    mlir::Operation *ret = body.getTerminator();
    mlir::OpBuilder b(ret);
    mlir::Value l = ret->getOperand(0);
    auto lt = llvm::cast<mlir::RankedTensorType>(l.getType());
    mlir::Value seed = nn::ConstantOp::create(
        b, ret->getLoc(), lt, mlir::DenseElementsAttr::get(lt, b.getF64FloatAttr(1.0)));
    llvm::SmallVector<mlir::Value> wrt;
    for (unsigned i = 0; i + 1 < func.getNumArguments(); ++i)
      if (llvm::isa<mlir::FloatType>(
              llvm::cast<mlir::RankedTensorType>(func.getArgument(i).getType()).getElementType()))
        wrt.push_back(func.getArgument(i));
    auto grads = buildGradients(b, {{l, seed}}, wrt);
    ASSERT_TRUE(mlir::succeeded(grads)) << diagnostics;
    llvm::SmallVector<mlir::Value> results{l};
    for (mlir::Value g : *grads) {
      ASSERT_TRUE(g) << "no gradient for an argument";
      results.push_back(g);
    }
    mlir::func::ReturnOp::create(b, ret->getLoc(), results);
    ret->erase();
    llvm::SmallVector<mlir::Type> types;
    for (mlir::Value v : results)
      types.push_back(v.getType());
    func.setType(b.getFunctionType(func.getArgumentTypes(), types));

    std::string step;
    llvm::raw_string_ostream os(step);
    module->print(os);
    std::string path = env.writeScratchFile(c.name + "_" + storage + ".mlir", step);
    CompileOptions options;
    options.workDir = dir.str().str();
    auto compiled = compilePrograms(*ctx, path, options);
    ASSERT_TRUE(static_cast<bool>(compiled))
        << llvm::toString(compiled.takeError()) << diagnostics;
    programs = std::move(*compiled);
    numGradients = wrt.size();
  }

  std::vector<distrt::NamedTensor> run(const Programs &programs,
                                       const std::vector<distrt::NamedTensor> &in) {
    auto out = runLocal(programs, in, 1);
    EXPECT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    return out ? std::move(*out) : std::vector<distrt::NamedTensor>();
  }

  /// Central finite differences of the loss in every element of every f64
  /// argument but %c, in argument order.
  std::vector<std::vector<double>> finiteDifferences(const Programs &programs,
                                                     std::vector<distrt::NamedTensor> inputs) {
    std::vector<std::vector<double>> fds;
    for (size_t a = 0; a + 1 < inputs.size(); ++a) {
      distrt::Tensor &x = inputs[a].tensor;
      if (x.dtype() != distrt::DType::kF64)
        continue;
      fds.emplace_back();
      for (int64_t k = 0; k < x.num_elements(); ++k) {
        double saved = x.data<double>()[k], h = 1e-6;
        x.data<double>()[k] = saved + h;
        double up = scalarOf(run(programs, inputs)[0].tensor);
        x.data<double>()[k] = saved - h;
        double down = scalarOf(run(programs, inputs)[0].tensor);
        x.data<double>()[k] = saved;
        fds.back().push_back((up - down) / (2 * h));
      }
    }
    return fds;
  }

  static double scalarOf(const distrt::Tensor &t) { return t.data<double>()[0]; }
};

class GradientCheck : public GradientCheckBase, public ::testing::WithParamInterface<Case> {};

TEST_P(GradientCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  Programs programs;
  size_t numGradients = 0;
  ASSERT_NO_FATAL_FAILURE(compileWithGradients(c, "f64", programs, numGradients));
  auto inputs = makeInputs(programs, "", 7);
  ASSERT_TRUE(static_cast<bool>(inputs)) << llvm::toString(inputs.takeError());
  // Keep inputs away from where the functions are undefined or kinked.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.3, 1.3);
  for (size_t i = 0; i < c.args.size(); ++i)
    if (c.args[i].second)
      for (int64_t k = 0; k < (*inputs)[i].tensor.num_elements(); ++k)
        (*inputs)[i].tensor.data<double>()[k] = u(rng);
  std::vector<distrt::NamedTensor> base = run(programs, *inputs);
  ASSERT_EQ(base.size(), numGradients + 1);
  auto fds = finiteDifferences(programs, *inputs);
  ASSERT_EQ(fds.size(), numGradients);
  for (size_t g = 0; g < numGradients; ++g) {
    const distrt::Tensor &grad = base[1 + g].tensor;
    ASSERT_EQ(grad.num_elements(), static_cast<int64_t>(fds[g].size()));
    for (size_t k = 0; k < fds[g].size(); ++k)
      EXPECT_NEAR(grad.data<double>()[k], fds[g][k], 1e-6 * std::max(1.0, std::fabs(fds[g][k])))
          << "gradient " << g << " element " << k;
  }
}

/// The same rule run in a 16-bit dtype (bf16 or f16 storage, f32 compute
/// inside the kernels) against finite differences of the f64 op at the
/// same point. The inputs are distinct multiples of 1/128 no larger than 2
/// in magnitude, which both dtypes hold exactly, so the 16-bit program and
/// the f64 reference see the same point, and no two inputs tie (a tie sends
/// a max's gradient to one side where finite differences split it). The
/// tolerance is a few roundings of the dtype, relative to the gradient's
/// scale: a wrong rule (a dropped term, a wrong sign or axis) is off by
/// O(1).
struct HalfCase {
  Case c;
  std::string storage;
};

std::ostream &operator<<(std::ostream &os, const HalfCase &c) {
  return os << c.c.name << " in " << c.storage;
}

class GradientCheckHalf : public GradientCheckBase,
                          public ::testing::WithParamInterface<HalfCase> {};

TEST_P(GradientCheckHalf, MatchesFiniteDifferencesOfF64) {
  const HalfCase &p = GetParam();
  Programs reference, half;
  size_t numGradients = 0, numHalfGradients = 0;
  ASSERT_NO_FATAL_FAILURE(compileWithGradients(p.c, "f64", reference, numGradients));
  ASSERT_NO_FATAL_FAILURE(compileWithGradients(p.c, p.storage, half, numHalfGradients));
  ASSERT_EQ(numGradients, numHalfGradients);
  auto inputs = makeInputs(reference, "", 7);
  ASSERT_TRUE(static_cast<bool>(inputs)) << llvm::toString(inputs.takeError());
  std::vector<int> pool;
  for (int k = 1; k <= 256; ++k)
    pool.push_back(k);
  std::mt19937_64 rng(11);
  std::shuffle(pool.begin(), pool.end(), rng);
  size_t next = 0;
  auto draw = [&](bool positive) {
    // positive arguments stay at 0.3 or more, away from where log, sqrt
    // and reciprocal blow up
    while (positive && pool[next] < 39)
      ++next;
    int k = pool.at(next);
    pool.erase(pool.begin() + next);
    next = 0;
    bool negative = !positive && (rng() & 1);
    return (negative ? -k : k) / 128.0;
  };
  for (size_t i = 0; i + 1 < inputs->size(); ++i) {
    distrt::Tensor &x = (*inputs)[i].tensor;
    if (x.dtype() == distrt::DType::kF64)
      for (int64_t k = 0; k < x.num_elements(); ++k)
        x.data<double>()[k] = draw(i < p.c.args.size() && p.c.args[i].second);
  }
  auto fds = finiteDifferences(reference, *inputs);
  ASSERT_EQ(fds.size(), numGradients);
  std::vector<distrt::NamedTensor> got = run(half, *inputs);
  ASSERT_EQ(got.size(), numGradients + 1);
  double tolerance = p.storage == "bf16" ? 1.0 / 32 : 1.0 / 256;
  for (size_t g = 0; g < numGradients; ++g) {
    const distrt::Tensor &grad = got[1 + g].tensor;
    ASSERT_EQ(grad.num_elements(), static_cast<int64_t>(fds[g].size()));
    double scale = 1.0;
    for (double fd : fds[g])
      scale = std::max(scale, std::fabs(fd));
    for (size_t k = 0; k < fds[g].size(); ++k)
      EXPECT_NEAR(grad.data<double>()[k], fds[g][k], tolerance * scale)
          << "gradient " << g << " element " << k << " in " << p.storage;
  }
}

#define T(s) "tensor<" s "xf64>"
const Case kCases[] = {
    {"add",
     {{"%a: " T("2x3"), false}, {"%b: " T("3"), false}},
     "%y = nn.add %a, %b : " T("2x3") ", " T("3") " -> " T("2x3"),
     T("2x3")},
    {"sub",
     {{"%a: " T("2x3"), false}, {"%b: " T("2x1"), false}},
     "%y = nn.sub %a, %b : " T("2x3") ", " T("2x1") " -> " T("2x3"),
     T("2x3")},
    {"mul",
     {{"%a: " T("2x3"), false}, {"%b: " T("3"), false}},
     "%y = nn.mul %a, %b : " T("2x3") ", " T("3") " -> " T("2x3"),
     T("2x3")},
    {"div",
     {{"%a: " T("2x3"), false}, {"%b: " T("2x3"), true}},
     "%y = nn.div %a, %b : " T("2x3") ", " T("2x3") " -> " T("2x3"),
     T("2x3")},
    {"pow",
     {{"%a: " T("2x3"), true}, {"%b: " T("3"), true}},
     "%y = nn.pow %a, %b : " T("2x3") ", " T("3") " -> " T("2x3"),
     T("2x3")},
    {"max",
     {{"%a: " T("2x3"), false}, {"%b: " T("2x3"), false}},
     "%y = nn.max %a, %b : " T("2x3") ", " T("2x3") " -> " T("2x3"),
     T("2x3")},
    {"min",
     {{"%a: " T("2x3"), false}, {"%b: " T("3"), false}},
     "%y = nn.min %a, %b : " T("2x3") ", " T("3") " -> " T("2x3"),
     T("2x3")},
    {"where",
     {{"%p: tensor<2x3xi1>", false},
      {"%a: " T("2x3"), false},
      {"%b: " T("3"), false}},
     "%y = nn.where %p, %a, %b : tensor<2x3xi1>, " T("2x3") ", " T(
         "3") " -> " T("2x3"),
     T("2x3")},
    {"neg", {{"%a: " T("2x3"), false}}, "%y = nn.neg %a : " T("2x3"), T("2x3")},
    {"abs", {{"%a: " T("2x3"), false}}, "%y = nn.abs %a : " T("2x3"), T("2x3")},
    {"exp", {{"%a: " T("2x3"), false}}, "%y = nn.exp %a : " T("2x3"), T("2x3")},
    {"log", {{"%a: " T("2x3"), true}}, "%y = nn.log %a : " T("2x3"), T("2x3")},
    {"sqrt",
     {{"%a: " T("2x3"), true}},
     "%y = nn.sqrt %a : " T("2x3"),
     T("2x3")},
    {"reciprocal",
     {{"%a: " T("2x3"), true}},
     "%y = nn.reciprocal %a : " T("2x3"),
     T("2x3")},
    {"tanh",
     {{"%a: " T("2x3"), false}},
     "%y = nn.tanh %a : " T("2x3"),
     T("2x3")},
    {"sigmoid",
     {{"%a: " T("2x3"), false}},
     "%y = nn.sigmoid %a : " T("2x3"),
     T("2x3")},
    {"erf", {{"%a: " T("2x3"), false}}, "%y = nn.erf %a : " T("2x3"), T("2x3")},
    {"relu",
     {{"%a: " T("2x3"), false}},
     "%y = nn.relu %a : " T("2x3"),
     T("2x3")},
    {"sin", {{"%a: " T("2x3"), false}}, "%y = nn.sin %a : " T("2x3"), T("2x3")},
    {"cos", {{"%a: " T("2x3"), false}}, "%y = nn.cos %a : " T("2x3"), T("2x3")},
    {"floor",
     {{"%a: " T("2x3"), false}},
     "%y = nn.floor %a : " T("2x3"),
     T("2x3")},
    {"ceil",
     {{"%a: " T("2x3"), false}},
     "%y = nn.ceil %a : " T("2x3"),
     T("2x3")},
    {"round",
     {{"%a: " T("2x3"), false}},
     "%y = nn.round %a : " T("2x3"),
     T("2x3")},
    {"sign",
     {{"%a: " T("2x3"), false}},
     "%y = nn.sign %a : " T("2x3"),
     T("2x3")},
    {"identity",
     {{"%a: " T("2x3"), false}},
     "%y = nn.identity %a : " T("2x3"),
     T("2x3")},
    {"gelu_erf",
     {{"%a: " T("2x3"), false}},
     "%y = nn.gelu %a : " T("2x3"),
     T("2x3")},
    {"gelu_tanh",
     {{"%a: " T("2x3"), false}},
     "%y = nn.gelu %a {approximate = \"tanh\"} : " T("2x3"),
     T("2x3")},
    {"leaky_relu",
     {{"%a: " T("2x3"), false}},
     "%y = nn.leaky_relu %a {alpha = 0.2 : f64} : " T("2x3"),
     T("2x3")},
    {"clip",
     {{"%a: " T("2x3"), false}},
     "%y = nn.clip %a {min = -0.4 : f64, max = 0.4 : f64} : " T("2x3"),
     T("2x3")},
    {"reduce_sum",
     {{"%a: " T("2x3x4"), false}},
     "%y = nn.reduce_sum %a axes [0, 2] : " T("2x3x4") " -> " T("3"),
     T("3")},
    {"reduce_mean_keep",
     {{"%a: " T("2x3x4"), false}},
     "%y = nn.reduce_mean %a axes [1] keepdims : " T("2x3x4") " -> " T("2x1x4"),
     T("2x1x4")},
    {"reduce_max",
     {{"%a: " T("2x3x4"), false}},
     "%y = nn.reduce_max %a axes [2] : " T("2x3x4") " -> " T("2x3"),
     T("2x3")},
    {"reduce_min_keep",
     {{"%a: " T("2x3x4"), false}},
     "%y = nn.reduce_min %a axes [0] keepdims : " T("2x3x4") " -> " T("1x3x4"),
     T("1x3x4")},
    {"softmax",
     {{"%a: " T("2x5"), false}},
     "%y = nn.softmax %a axis 1 : " T("2x5"),
     T("2x5")},
    {"log_softmax",
     {{"%a: " T("2x5"), false}},
     "%y = nn.log_softmax %a axis 1 : " T("2x5"),
     T("2x5")},
    {"layer_norm",
     {{"%a: " T("2x3x4"), false},
      {"%g: " T("4"), false},
      {"%b: " T("4"), false}},
     "%y = nn.layer_norm %a, %g, %b axis 2 epsilon 1.0e-05 : (" T(
         "2x3x4") ", " T("4") ", " T("4") ") -> " T("2x3x4"),
     T("2x3x4")},
    {"layer_norm_2d",
     {{"%a: " T("2x3x4"), false}, {"%g: " T("3x4"), false}},
     "%y = nn.layer_norm %a, %g axis 1 epsilon 1.0e-05 : (" T("2x3x4") ", " T(
         "3x4") ") -> " T("2x3x4"),
     T("2x3x4")},
    {"batch_norm",
     {{"%x: " T("2x3x2x2"), false},
      {"%s: " T("3"), false},
      {"%b: " T("3"), false},
      {"%mean: " T("3"), false},
      {"%v: " T("3"), true}},
     "%y = nn.batch_norm %x, %s, %b, %mean, %v epsilon 1.0e-05 : "
     "(" T("2x3x2x2") ", " T("3") ", " T("3") ", " T("3") ", " T("3") ") -> " T(
         "2x3x2x2"),
     T("2x3x2x2")},
    {"matmul",
     {{"%a: " T("2x3"), false}, {"%b: " T("3x4"), false}},
     "%y = nn.matmul %a, %b : " T("2x3") ", " T("3x4") " -> " T("2x4"),
     T("2x4")},
    {"matmul_batched",
     {{"%a: " T("2x2x3"), false}, {"%b: " T("3x4"), false}},
     "%y = nn.matmul %a, %b : " T("2x2x3") ", " T("3x4") " -> " T("2x2x4"),
     T("2x2x4")},
    {"matmul_broadcast",
     {{"%a: " T("1x2x3"), false}, {"%b: " T("2x3x4"), false}},
     "%y = nn.matmul %a, %b : " T("1x2x3") ", " T("2x3x4") " -> " T("2x2x4"),
     T("2x2x4")},
    {"matmul_vector_lhs",
     {{"%a: " T("3"), false}, {"%b: " T("2x3x4"), false}},
     "%y = nn.matmul %a, %b : " T("3") ", " T("2x3x4") " -> " T("2x4"),
     T("2x4")},
    {"matmul_vector_rhs",
     {{"%a: " T("2x3"), false}, {"%b: " T("3"), false}},
     "%y = nn.matmul %a, %b : " T("2x3") ", " T("3") " -> " T("2"),
     T("2")},
    // A linear layer as torch exports it: x @ transpose(w). The
    // weight's gradient is built as d^T x, the input's as d @ w.
    {"linear_transposed_weight",
     {{"%a: " T("2x2x3"), false}, {"%w: " T("4x3"), false}},
     "%wt = nn.transpose %w perm [1, 0] : " T("4x3") " -> " T(
         "3x4") "\n  %y = nn.matmul %a, %wt : " T("2x2x3") ", " T("3x4") " ->"
                                                                         " " T(
                                                                             "2"
                                                                             "x"
                                                                             "2"
                                                                             "x"
                                                                             "4"),
     T("2x2x4")},
    {"linear_transposed_weight_2d",
     {{"%a: " T("2x3"), false}, {"%w: " T("4x3"), false}},
     "%wt = nn.transpose %w perm [1, 0] : " T("4x3") " -> " T(
         "3x4") "\n  %y = nn.matmul %a, %wt : " T("2x3") ", " T("3x4") " -> " T("2x4"),
     T("2x4")},
    {"matmul_unit_batch",
     {{"%a: " T("1x2x3"), false}, {"%b: " T("3x4"), false}},
     "%y = nn.matmul %a, %b : " T("1x2x3") ", " T("3x4") " -> " T("1x2x4"),
     T("1x2x4")},
    {"transpose",
     {{"%a: " T("2x3x4"), false}},
     "%y = nn.transpose %a perm [2, 0, 1] : " T("2x3x4") " -> " T("4x2x3"),
     T("4x2x3")},
    {"reshape",
     {{"%a: " T("2x3x4"), false}},
     "%y = nn.reshape %a : " T("2x3x4") " -> " T("6x4"),
     T("6x4")},
    {"expand",
     {{"%a: " T("1x3"), false}},
     "%y = nn.expand %a : " T("1x3") " -> " T("2x3"),
     T("2x3")},
    {"concat",
     {{"%a: " T("2x3"), false}, {"%b: " T("2x1"), false}},
     "%y = nn.concat %a, %b axis 1 : (" T("2x3") ", " T("2x1") ") -> " T("2x4"),
     T("2x4")},
    {"slice",
     {{"%a: " T("4x5"), false}},
     "%y = nn.slice %a starts [1, 0] ends [3, 4] steps [1, 1] : " T(
         "4x5") " -> " T("2x4"),
     T("2x4")},
    {"pad",
     {{"%a: " T("2x3"), false}},
     "%y = nn.pad %a pads [1, 0, 0, 2] : " T("2x3") " -> " T("3x5"),
     T("3x5")},
    {"pad_crop",
     {{"%a: " T("3x4"), false}},
     "%y = nn.pad %a pads [-1, 0, 1, -2] : " T("3x4") " -> " T("3x2"),
     T("3x2")},
    {"gather",
     {{"%t: " T("5x3"), false}, {"%i: tensor<2x2xi64>", false}},
     "%y = nn.gather %t, %i axis 0 : " T("5x3") ", tensor<2x2xi64> -> " T(
         "2x2x3"),
     T("2x2x3")},
    {"gather_elements",
     {{"%t: " T("3x4"), false}, {"%i: tensor<3x5xi64>", false}},
     "%y = nn.gather_elements %t, %i axis 1 : " T("3x4") ", tensor<3x5xi64> -> " T(
         "3x5"),
     T("3x5")},
    // One index per row, so no two updates land on one element (which of
    // them wins is unspecified, and so is its gradient).
    {"scatter_elements",
     {{"%t: " T("3x4"), false},
      {"%i: tensor<3x1xi64>", false},
      {"%u: " T("3x1"), false}},
     "%y = nn.scatter_elements %t, %i, %u axis 1 : (" T("3x4") ", tensor<3x1xi64>, " T(
         "3x1") ") -> " T("3x4"),
     T("3x4")},
    {"scatter_elements_add",
     {{"%t: " T("4x3"), false},
      {"%i: tensor<5x3xi64>", false},
      {"%u: " T("5x3"), false}},
     "%y = nn.scatter_elements %t, %i, %u axis 0 reduction \"add\" : (" T(
         "4x3") ", tensor<5x3xi64>, " T("5x3") ") -> " T("4x3"),
     T("4x3")},
    // Index tuples pick rows (and single elements) of a [3, 4, 2] table;
    // a row picked twice gets both gradients.
    {"gather_nd",
     {{"%t: " T("3x4x2"), false}, {"%i: tensor<5x2xi64>", false}},
     "%y = nn.gather_nd %t, %i batch_dims 0 : " T("3x4x2") ", tensor<5x2xi64> -> " T(
         "5x2"),
     T("5x2")},
    {"scatter_nd_add",
     {{"%t: " T("4x3"), false},
      {"%i: tensor<5x1xi64>", false},
      {"%u: " T("5x3"), false}},
     "%y = nn.scatter_nd %t, %i, %u reduction \"add\" : (" T("4x3") ", tensor<5x1xi64>, " T(
         "5x3") ") -> " T("4x3"),
     T("4x3")},
    {"einsum_batch_matmul",
     {{"%a: " T("2x3x4"), false}, {"%b: " T("2x4x5"), false}},
     "%y = nn.einsum \"bij,bjk->bik\" %a, %b : (" T("2x3x4") ", " T(
         "2x4x5") ") -> " T("2x3x5"),
     T("2x3x5")},
    // A mixture of experts' dispatch and combine.
    {"einsum_dispatch",
     {{"%mask: " T("4x2x3"), false}, {"%x: " T("4x5"), false}},
     "%y = nn.einsum \"tec,td->ecd\" %mask, %x : (" T("4x2x3") ", " T(
         "4x5") ") -> " T("2x3x5"),
     T("2x3x5")},
    {"einsum_combine",
     {{"%mask: " T("4x2x3"), false}, {"%e: " T("2x3x5"), false}},
     "%y = nn.einsum \"tec,ecd->td\" %mask, %e : (" T("4x2x3") ", " T(
         "2x3x5") ") -> " T("4x5"),
     T("4x5")},
    // Letters only one operand has are summed there: its gradient is
    // broadcast back along them.
    {"einsum_summed_alone",
     {{"%a: " T("3x4x2"), false}, {"%b: " T("4x5"), false}},
     "%y = nn.einsum \"ijk,jl->il\" %a, %b : (" T("3x4x2") ", " T(
         "4x5") ") -> " T("3x5"),
     T("3x5")},
    {"einsum_three_operands",
     {{"%a: " T("2x3"), false}, {"%b: " T("3x4"), false}, {"%c2: " T("4x2"), false}},
     "%y = nn.einsum \"ij,jk,kl->il\" %a, %b, %c2 : (" T("2x3") ", " T(
         "3x4") ", " T("4x2") ") -> " T("2x2"),
     T("2x2")},
    {"einsum_transpose_sum",
     {{"%a: " T("3x4x2"), false}},
     "%y = nn.einsum \"ijk->ki\" %a : (" T("3x4x2") ") -> " T("2x3"),
     T("2x3")},
    // TopK's values: the input gathered at the top-k indices (the indices
    // take no gradient).
    {"top_k_values",
     {{"%a: " T("3x5"), false}},
     "%i = nn.top_k %a k 2 axis 1 : " T("3x5") " -> tensor<3x2xi64>\n"
     "  %y = nn.gather_elements %a, %i axis 1 : " T("3x5") ", tensor<3x2xi64> -> " T("3x2"),
     T("3x2")},
    {"cumsum",
     {{"%a: " T("3x4"), false}},
     "%y = nn.cumsum %a axis 1 : " T("3x4"),
     T("3x4")},
    {"cumsum_exclusive_reverse",
     {{"%a: " T("3x4"), false}},
     "%y = nn.cumsum %a axis 0 exclusive reverse : " T("3x4"),
     T("3x4")},
    {"conv",
     {{"%x: " T("1x2x5x5"), false},
      {"%w: " T("3x2x3x3"), false},
      {"%b: " T("3"), false}},
     "%y = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads "
     "= array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (" T(
         "1x2x5x5") ", " T("3x2x3x3") ", " T("3") ") -> " T("1x3x3x"
                                                            "3"),
     T("1x3x3x3")},
    {"conv_grouped",
     {{"%x: " T("2x4x4x4"), false}, {"%w: " T("4x2x2x2"), false}},
     "%y = nn.conv %x, %w {dilations = array<i64: 1, 1>, pads = "
     "array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, group = "
     "2 : i64} : (" T("2x4x4x4") ", " T("4x2x2x2") ") -> " T("2x4x3x3"),
     T("2x4x3x3")},
    // ConvTranspose's form: strided, padded, one row and column of output
    // padding; and grouped.
    {"conv_grad_input",
     {{"%x: " T("1x3x3x3"), false}, {"%w: " T("3x2x3x3"), false}},
     "%y = nn.conv_grad_input %x, %w {dilations = array<i64: 1, 1>, pads = "
     "array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (" T("1x3x3x3") ", " T(
         "3x2x3x3") ") -> " T("1x2x6x6"),
     T("1x2x6x6")},
    {"conv_grad_input_grouped",
     {{"%x: " T("1x4x3x3"), false}, {"%w: " T("4x1x2x2"), false}},
     "%y = nn.conv_grad_input %x, %w {dilations = array<i64: 1, 1>, pads = "
     "array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, group = 2 : i64} : (" T(
         "1x4x3x3") ", " T("4x1x2x2") ") -> " T("1x2x4x4"),
     T("1x2x4x4")},
    {"max_pool",
     {{"%x: " T("1x2x4x4"), false}},
     "%y = nn.max_pool %x {kernel = array<i64: 2, 2>, strides = "
     "array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = "
     "array<i64: 1, 1>} : " T("1x2x4x4") " -> " T("1x2x2x2"),
     T("1x2x2x2")},
    {"avg_pool",
     {{"%x: " T("1x2x5x5"), false}},
     "%y = nn.avg_pool %x {kernel = array<i64: 3, 3>, strides = "
     "array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = "
     "array<i64: 1, 1>} : " T("1x2x5x5") " -> " T("1x2x3x3"),
     T("1x2x3x3")},
    {"global_avg_pool",
     {{"%x: " T("2x3x2x2"), false}},
     "%y = nn.global_avg_pool %x : " T("2x3x2x2") " -> " T("2x3x1x1"),
     T("2x3x1x1")},
    {"global_max_pool",
     {{"%x: " T("2x3x2x2"), false}},
     "%y = nn.global_max_pool %x : " T("2x3x2x2") " -> " T("2x3x1x1"),
     T("2x3x1x1")},
};
#undef T

INSTANTIATE_TEST_SUITE_P(Ops, GradientCheck, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

std::vector<HalfCase> halfCases() {
  std::vector<HalfCase> cases;
  for (const char *storage : {"bf16", "f16"})
    for (const Case &c : kCases)
      cases.push_back({c, storage});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, GradientCheckHalf, ::testing::ValuesIn(halfCases()),
                         [](const ::testing::TestParamInfo<HalfCase> &info) {
                           return info.param.c.name + "_" + info.param.storage;
                         });

} // namespace
