//===- RandomGraphTest.cpp - property test of the whole flow ----*- C++ -*-===//
//
// Random small graphs of nn ops with random annotations, on 1-D, 2-D and 3-D
// meshes (with extents that do not always divide): propagate, reshard,
// partition, run every rank on the local backend, and compare with the
// single-device run of the same graph. Any difference is a bug somewhere in
// the rules, the planner, the partitioner, the exporter or the runtime.
//
//===----------------------------------------------------------------------===//
#include "distopt/InitAll.h"
#include "distopt/Check/TensorComparison.h"
#include "distopt/Session/ProgramInputs.h"
#include "distopt/Session/Session.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "../support/CompilerTestContext.h"

#include <gtest/gtest.h>
#include <numeric>
#include <random>
#include <sstream>

using namespace distopt;

namespace {

struct Value {
  std::string name;
  std::vector<int64_t> shape;
};

std::string typeOf(const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + "f32>";
}

/// Builds one random function; `meshAxes` annotations per value are random.
class GraphBuilder {
public:
  GraphBuilder(uint64_t seed, std::vector<int64_t> meshSizes)
      : rng(seed), meshSizes(std::move(meshSizes)) {}

  std::string build() {
    std::vector<int64_t> dims{4, 5, 6, 8};
    int rank = pick(2) + 2;
    std::vector<int64_t> shape;
    for (int i = 0; i < rank; ++i)
      shape.push_back(dims[pick(dims.size())]);
    std::ostringstream args;
    Value x{"%x", shape};
    args << "%x: " << typeOf(shape);
    values.push_back(annotateMaybe(x));
    int numOps = 4 + pick(6);
    for (int i = 0; i < numOps; ++i)
      addOp();
    Value out = values.back();
    std::ostringstream mlir;
    mlir << "dist.mesh @mesh [";
    for (size_t a = 0; a < meshSizes.size(); ++a)
      mlir << (a ? ", " : "") << "a" << a << " = " << meshSizes[a];
    mlir << "]\nfunc.func @main(" << args.str() << ") -> " << typeOf(out.shape)
         << " {\n"
         << body.str() << "  return " << out.name << " : " << typeOf(out.shape)
         << "\n}\n";
    return mlir.str();
  }

private:
  int pick(size_t n) { return static_cast<int>(rng() % n); }

  std::string fresh() { return "%v" + std::to_string(counter++); }

  Value weight(std::vector<int64_t> shape) {
    Value w{fresh(), shape};
    body << "  " << w.name << " = nn.weight \"w" << counter
         << "\" : " << typeOf(shape) << "\n";
    return annotateMaybe(w);
  }

  /// With some probability, constrains `v` with a random sharding.
  Value annotateMaybe(Value v) {
    if (pick(3) == 0)
      return v;
    std::string placements;
    for (size_t a = 0; a < meshSizes.size(); ++a) {
      int r = pick(5);
      std::string p = r < 2 ? "?"
                      : r == 2
                          ? "R"
                          : "S(" + std::to_string(pick(v.shape.size())) + ")";
      placements += (a ? ", " : "") + p;
    }
    Value out{fresh(), v.shape};
    body << "  " << out.name << " = dist.annotate " << v.name << " to <@mesh, ["
         << placements << "]> priority " << pick(3) << " : " << typeOf(v.shape)
         << "\n";
    return out;
  }

  void emit(const Value &result, const std::string &text) {
    body << "  " << result.name << " = " << text << "\n";
    values.push_back(annotateMaybe(result));
  }

  void addOp() {
    Value v =
        values[values.size() - 1 - pick(std::min<size_t>(values.size(), 3))];
    int64_t rank = v.shape.size();
    std::string t = typeOf(v.shape);
    switch (pick(12)) {
    case 0: { // unary
      const char *ops[] = {"relu", "tanh", "gelu", "neg", "sigmoid"};
      Value r{fresh(), v.shape};
      emit(r, std::string("nn.") + ops[pick(5)] + " " + v.name + " : " + t);
      break;
    }
    case 1: { // binary with a same-shaped value or a broadcast bias
      const char *ops[] = {"add", "mul", "sub"};
      std::string other, otherType;
      for (auto it = values.rbegin(); it != values.rend(); ++it)
        if (it->shape == v.shape && it->name != v.name) {
          other = it->name;
          otherType = t;
          break;
        }
      if (other.empty() || pick(2)) {
        Value b = weight({v.shape.back()});
        other = b.name;
        otherType = typeOf(b.shape);
      }
      Value r{fresh(), v.shape};
      emit(r, std::string("nn.") + ops[pick(3)] + " " + v.name + ", " + other +
                  " : " + t + ", " + otherType + " -> " + t);
      break;
    }
    case 2:
    case 3: { // matmul with a weight
      std::vector<int64_t> outs{4, 6, 8, 10};
      int64_t n = outs[pick(outs.size())];
      Value w = weight({v.shape.back(), n});
      std::vector<int64_t> shape = v.shape;
      shape.back() = n;
      Value r{fresh(), shape};
      emit(r, "nn.matmul " + v.name + ", " + w.name + " : " + t + ", " +
                  typeOf(w.shape) + " -> " + typeOf(shape));
      break;
    }
    case 4: { // softmax
      Value r{fresh(), v.shape};
      emit(r, "nn.softmax " + v.name + " axis " + std::to_string(pick(rank)) +
                  " : " + t);
      break;
    }
    case 5: { // layer norm over the last dimension
      Value g = weight({v.shape.back()});
      Value b = weight({v.shape.back()});
      Value r{fresh(), v.shape};
      emit(r, "nn.layer_norm " + v.name + ", " + g.name + ", " + b.name +
                  " axis " + std::to_string(rank - 1) + " epsilon 1.0e-05 : (" +
                  t + ", " + typeOf(g.shape) + ", " + typeOf(b.shape) +
                  ") -> " + t);
      break;
    }
    case 6: { // transpose
      std::vector<int64_t> perm(rank);
      for (int64_t i = 0; i < rank; ++i)
        perm[i] = i;
      std::shuffle(perm.begin(), perm.end(), rng);
      std::vector<int64_t> shape;
      std::string p;
      for (int64_t i = 0; i < rank; ++i) {
        shape.push_back(v.shape[perm[i]]);
        p += (i ? ", " : "") + std::to_string(perm[i]);
      }
      Value r{fresh(), shape};
      emit(r, "nn.transpose " + v.name + " perm [" + p + "] : " + t + " -> " +
                  typeOf(shape));
      break;
    }
    case 7: { // reshape: split the last dim in two, or merge the last two
      std::vector<int64_t> shape = v.shape;
      if (shape.back() % 2 == 0 && rank < 4) {
        shape.back() /= 2;
        shape.push_back(2);
      } else if (rank >= 3) {
        int64_t last = shape.back();
        shape.pop_back();
        shape.back() *= last;
      } else {
        return;
      }
      Value r{fresh(), shape};
      emit(r, "nn.reshape " + v.name + " : " + t + " -> " + typeOf(shape));
      break;
    }
    case 8: { // reduction with keepdims
      const char *ops[] = {"reduce_sum", "reduce_mean", "reduce_max"};
      int64_t axis = pick(rank);
      std::vector<int64_t> shape = v.shape;
      shape[axis] = 1;
      Value r{fresh(), shape};
      emit(r, std::string("nn.") + ops[pick(3)] + " " + v.name + " axes [" +
                  std::to_string(axis) + "] keepdims : " + t + " -> " +
                  typeOf(shape));
      break;
    }
    case 9: { // batched product with its own transpose (attention scores)
      if (rank < 3)
        return;
      std::vector<int64_t> perm(rank), tshape = v.shape;
      for (int64_t i = 0; i < rank; ++i)
        perm[i] = i;
      std::swap(perm[rank - 1], perm[rank - 2]);
      std::swap(tshape[rank - 1], tshape[rank - 2]);
      std::string p;
      for (int64_t i = 0; i < rank; ++i)
        p += (i ? ", " : "") + std::to_string(perm[i]);
      Value vt{fresh(), tshape};
      body << "  " << vt.name << " = nn.transpose " << v.name << " perm [" << p
           << "] : " << t << " -> " << typeOf(tshape) << "\n";
      std::vector<int64_t> shape = v.shape;
      shape[rank - 1] = v.shape[rank - 2];
      Value r{fresh(), shape};
      emit(r, "nn.matmul " + v.name + ", " + vt.name + " : " + t + ", " +
                  typeOf(tshape) + " -> " + typeOf(shape));
      break;
    }
    case 10: { // slice the first half of a dimension
      int64_t axis = pick(rank);
      if (v.shape[axis] < 2)
        return;
      std::vector<int64_t> shape = v.shape;
      shape[axis] = v.shape[axis] / 2;
      std::string starts, ends, steps;
      for (int64_t i = 0; i < rank; ++i) {
        starts += (i ? ", " : "") + std::string("0");
        ends += (i ? ", " : "") + std::to_string(shape[i]);
        steps += (i ? ", " : "") + std::string("1");
      }
      Value r{fresh(), shape};
      emit(r, "nn.slice " + v.name + " starts [" + starts + "] ends [" + ends +
                  "] steps [" + steps + "] : " + t + " -> " + typeOf(shape));
      break;
    }
    case 11: { // concatenate with itself
      int64_t axis = pick(rank);
      std::vector<int64_t> shape = v.shape;
      shape[axis] *= 2;
      Value r{fresh(), shape};
      emit(r, "nn.concat " + v.name + ", " + v.name + " axis " +
                  std::to_string(axis) + " : (" + t + ", " + t + ") -> " +
                  typeOf(shape));
      break;
    }
    }
  }

  std::mt19937_64 rng;
  std::vector<int64_t> meshSizes;
  std::vector<Value> values;
  std::ostringstream body;
  int counter = 0;
};

class RandomGraphTest : public ::testing::TestWithParam<std::vector<int64_t>> {
protected:
  distopt::testing::CompilerTestContext env{"random-graph"};
  mlir::MLIRContext *ctx = &env.context();
  std::string &diagnostics = env.diagnostics;
  const llvm::SmallString<128> &dir = env.dir;
};

TEST_P(RandomGraphTest, PartitionedEqualsSingleDevice) {
  std::vector<int64_t> mesh = GetParam();
  std::string spec;
  for (size_t a = 0; a < mesh.size(); ++a)
    spec += (a ? "," : "") + std::string("a") + std::to_string(a) + "=" +
            std::to_string(mesh[a]);
  const int graphs = 60;
  for (int g = 0; g < graphs; ++g) {
    uint64_t seed = 1000 * mesh.size() + 97 * mesh[0] + g;
    std::string text = GraphBuilder(seed, mesh).build();
    std::string path =
        env.writeScratchFile("graph" + std::to_string(g) + ".mlir", text);
    SCOPED_TRACE("graph " + std::to_string(g) + " (seed " +
                 std::to_string(seed) + "):\n" + text);
    diagnostics.clear();
    CompileOptions distributed;
    distributed.meshSpec = spec;
    distributed.workDir = dir.str().str();
    auto programs = compilePrograms(*ctx, path, distributed);
    ASSERT_TRUE(static_cast<bool>(programs))
        << llvm::toString(programs.takeError()) << "\n"
        << diagnostics;
    ASSERT_EQ(programs->size(),
              static_cast<size_t>(std::accumulate(mesh.begin(), mesh.end(), 1,
                                                  std::multiplies<int64_t>())));
    // The single-device reference: the same graph without its mesh.
    CompileOptions single;
    single.singleDevice = true;
    single.workDir = dir.str().str();
    auto reference = compilePrograms(*ctx, path, single);
    ASSERT_TRUE(static_cast<bool>(reference))
        << llvm::toString(reference.takeError()) << "\n"
        << diagnostics;
    auto inputs = makeInputs(*reference, "", seed);
    ASSERT_TRUE(static_cast<bool>(inputs))
        << llvm::toString(inputs.takeError());
    auto expected = runLocal(*reference, *inputs, 1);
    ASSERT_TRUE(static_cast<bool>(expected))
        << llvm::toString(expected.takeError());
    auto got = runLocal(*programs, *inputs, 1);
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(got->size(), expected->size());
    for (size_t i = 0; i < got->size(); ++i) {
      Comparison c =
          compareTensors((*got)[i].tensor, (*expected)[i].tensor, 1e-4, 1e-5);
      EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Meshes, RandomGraphTest,
    ::testing::Values(std::vector<int64_t>{4}, std::vector<int64_t>{3},
                      std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 3},
                      std::vector<int64_t>{2, 2, 2}),
    [](const ::testing::TestParamInfo<std::vector<int64_t>> &info) {
      std::string name = "mesh";
      for (int64_t s : info.param)
        name += "_" + std::to_string(s);
      return name;
    });

} // namespace
