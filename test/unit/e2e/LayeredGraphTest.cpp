//===- LayeredGraphTest.cpp - property test of plans on layered models ----===//
//
// Random models built like real ones — named layers of projections with
// biases, convolutions with biases, norms, residual adds, and a constant
// every layer reads — compiled with the presets and pipeline stages on 1-D
// to 3-D meshes, every rank run, and the outputs compared with a single
// device. The classes of defect this guards: a partial sum meeting a
// replicated addend, a shared constant crossing a stage cut, a sharded
// parameter gathered in the wrong stage.
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
#include <random>
#include <sstream>

using namespace distopt;

namespace {

std::string typeOf(const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + "f32>";
}

/// A random layered model in the nn dialect; ops carry ONNX-like node names
/// (`/layers.3/fc1/MatMul`) so plans and stage cuts find the layers.
class LayeredModelBuilder {
public:
  LayeredModelBuilder(uint64_t seed, bool cnn, int64_t batch)
      : rng(seed), cnn(cnn), batch(batch) {}

  std::string build(int layers) {
    std::vector<int64_t> shape;
    if (cnn)
      shape = {batch, pickOf({4, 6, 8}), 5, 5};
    else
      shape = {batch, 3, pickOf({8, 12})};
    std::string x = "%x";
    // A constant every layer reads (a mask buffer, a shared scale).
    std::vector<int64_t> sharedShape =
        cnn ? std::vector<int64_t>{shape[1], 1, 1}
            : std::vector<int64_t>{shape[1], shape[2]};
    std::string shared = weight("shared.buffer", sharedShape, "/shared");
    for (int l = 0; l < layers; ++l)
      x = cnn ? convLayer(l, x, shape, shared)
              : projectionLayer(l, x, shape, shared);
    std::string name = "/head/";
    std::string out;
    std::vector<int64_t> outShape;
    if (cnn) {
      outShape = {shape[0], shape[1], 1, 1};
      out = emit("nn.global_avg_pool " + x + " : " + typeOf(shape) + " -> " +
                     typeOf(outShape),
                 name + "GlobalAveragePool");
    } else {
      int64_t classes = pickOf({5, 10});
      std::string w = weight("head.weight", {shape[2], classes}, name);
      outShape = {shape[0], shape[1], classes};
      out = emit("nn.matmul " + x + ", " + w + " : " + typeOf(shape) + ", " +
                     typeOf({shape[2], classes}) + " -> " + typeOf(outShape),
                 name + "MatMul");
    }
    std::ostringstream m;
    m << "func.func @main(%x: " << typeOf(shape) << ") -> " << typeOf(outShape)
      << " {\n"
      << body.str() << "  return " << out << " : " << typeOf(outShape)
      << "\n}\n";
    return m.str();
  }

private:
  int64_t pickOf(std::initializer_list<int64_t> values) {
    return *(values.begin() + rng() % values.size());
  }
  std::string fresh() { return "%v" + std::to_string(counter++); }
  std::string weight(const std::string &name, std::vector<int64_t> shape,
                     const std::string &node) {
    std::string v = fresh();
    body << "  " << v << " = nn.weight \"" << name << "\" : " << typeOf(shape)
         << " loc(\"" << node << "\")\n";
    return v;
  }
  std::string emit(const std::string &text, const std::string &node) {
    std::string v = fresh();
    body << "  " << v << " = " << text << " loc(\"" << node << "\")\n";
    return v;
  }
  std::string biasAdd(const std::string &v, std::vector<int64_t> shape,
                      const std::string &bias, std::vector<int64_t> biasShape,
                      const std::string &node) {
    return emit("nn.add " + v + ", " + bias + " : " + typeOf(shape) + ", " +
                    typeOf(biasShape) + " -> " + typeOf(shape),
                node);
  }

  /// norm -> (x W1 + b1) -> act -> (* or + the shared constant) -> (h W2 + b2)
  /// -> + residual.
  std::string projectionLayer(int l, const std::string &x,
                              const std::vector<int64_t> &shape,
                              const std::string &shared) {
    std::string p = "/layers." + std::to_string(l) + "/";
    std::string lp = "layers." + std::to_string(l) + ".";
    int64_t d = shape[2], f = pickOf({8, 12, 16});
    std::string t = typeOf(shape);
    std::string h = x;
    if (rng() % 2) {
      std::string g = weight(lp + "ln.weight", {d}, p + "ln");
      std::string b = weight(lp + "ln.bias", {d}, p + "ln");
      h = emit("nn.layer_norm " + h + ", " + g + ", " + b +
                   " axis 2 epsilon 1.0e-05 : (" + t + ", " + typeOf({d}) +
                   ", " + typeOf({d}) + ") -> " + t,
               p + "ln/LayerNormalization");
    }
    std::vector<int64_t> hs = {shape[0], shape[1], f};
    std::string w1 = weight(lp + "fc1.weight", {d, f}, p + "fc1");
    std::string b1 = weight(lp + "fc1.bias", {f}, p + "fc1");
    h = emit("nn.matmul " + h + ", " + w1 + " : " + t + ", " + typeOf({d, f}) +
                 " -> " + typeOf(hs),
             p + "fc1/MatMul");
    h = biasAdd(h, hs, b1, {f}, p + "fc1/Add");
    const char *acts[] = {"nn.relu", "nn.tanh", "nn.gelu"};
    h = emit(std::string(acts[rng() % 3]) + " " + h + " : " + typeOf(hs),
             p + "act");
    std::string w2 = weight(lp + "fc2.weight", {f, d}, p + "fc2");
    std::string b2 = weight(lp + "fc2.bias", {d}, p + "fc2");
    h = emit("nn.matmul " + h + ", " + w2 + " : " + typeOf(hs) + ", " +
                 typeOf({f, d}) + " -> " + t,
             p + "fc2/MatMul");
    h = biasAdd(h, shape, b2, {d}, p + "fc2/Add");
    std::vector<int64_t> sharedShape{shape[1], shape[2]};
    h = emit(std::string(rng() % 2 ? "nn.mul " : "nn.add ") + h + ", " +
                 shared + " : " + t + ", " + typeOf(sharedShape) + " -> " + t,
             p + "shared");
    return emit("nn.add " + x + ", " + h + " : " + t + ", " + t + " -> " + t,
                p + "Add");
  }

  /// conv(3x3, bias) -> relu -> conv(1x1, bias) -> + shared -> + residual.
  std::string convLayer(int l, const std::string &x,
                        const std::vector<int64_t> &shape,
                        const std::string &shared) {
    std::string p = "/layers." + std::to_string(l) + "/";
    std::string lp = "layers." + std::to_string(l) + ".";
    int64_t c = shape[1];
    std::string t = typeOf(shape);
    auto conv = [&](const std::string &in, int64_t k, const std::string &name) {
      std::vector<int64_t> ws{c, c, k, k};
      std::string w = weight(lp + name + ".weight", ws, p + name);
      std::string b = weight(lp + name + ".bias", {c}, p + name);
      int64_t pad = k / 2;
      return emit("nn.conv " + in + ", " + w + ", " + b +
                      " {dilations = array<i64: 1, 1>, pads = array<i64: " +
                      std::to_string(pad) + ", " + std::to_string(pad) + ", " +
                      std::to_string(pad) + ", " + std::to_string(pad) +
                      ">, strides = array<i64: 1, 1>} : (" + t + ", " +
                      typeOf(ws) + ", " + typeOf({c}) + ") -> " + t,
                  p + name + "/Conv");
    };
    std::string h = conv(x, 3, "conv1");
    h = emit("nn.relu " + h + " : " + t, p + "Relu");
    h = conv(h, 1, "conv2");
    h = emit("nn.add " + h + ", " + shared + " : " + t + ", " +
                 typeOf({c, 1, 1}) + " -> " + t,
             p + "shared");
    return emit("nn.add " + x + ", " + h + " : " + t + ", " + t + " -> " + t,
                p + "Add");
  }

  std::mt19937_64 rng;
  bool cnn;
  int64_t batch;
  std::ostringstream body;
  int counter = 0;
};

struct Config {
  std::string name;
  std::string mesh;
  std::vector<std::string> presets;
  int64_t microbatches; // 0: no pipeline
  bool cnn;
  int64_t batch; // per microbatch
  int layers;
};

std::ostream &operator<<(std::ostream &os, const Config &c) {
  return os << c.name;
}

class LayeredGraphTest : public ::testing::TestWithParam<Config> {
protected:
  void SetUp() override { ctx->printOpOnDiagnostic(false); }

  distopt::testing::CompilerTestContext env{"layered-graph"};
  mlir::MLIRContext *ctx = &env.context();
  std::string &diagnostics = env.diagnostics;
  const llvm::SmallString<128> &dir = env.dir;
};

TEST_P(LayeredGraphTest, PartitionedEqualsSingleDevice) {
  const Config &config = GetParam();
  const int graphs = 20;
  for (int g = 0; g < graphs; ++g) {
    uint64_t seed = std::hash<std::string>()(config.name) % 100000 + g;
    std::string text = LayeredModelBuilder(seed, config.cnn, config.batch)
                           .build(config.layers);
    std::string path =
        env.writeScratchFile("model" + std::to_string(g) + ".mlir", text);
    SCOPED_TRACE("graph " + std::to_string(g) + ":\n" + text);
    diagnostics.clear();

    CompileOptions options;
    options.meshSpec = config.mesh;
    options.workDir = dir.str().str();
    PlanSpec spec;
    spec.source = "--plan";
    spec.loc = mlir::UnknownLoc::get(ctx);
    spec.presets = config.presets;
    if (config.microbatches) {
      PipelineSpec pp;
      pp.split = "layers.*";
      pp.microbatches = config.microbatches;
      pp.schedule = g % 2 ? "gpipe" : "1f1b";
      pp.loc = spec.loc;
      spec.pipeline = pp;
    }
    options.plan.specs.push_back(spec);
    auto programs = compilePrograms(*ctx, path, options);
    ASSERT_TRUE(static_cast<bool>(programs))
        << llvm::toString(programs.takeError()) << "\n"
        << diagnostics;
    CompileOptions single;
    single.singleDevice = true;
    single.workDir = options.workDir;
    auto reference = compilePrograms(*ctx, path, single);
    ASSERT_TRUE(static_cast<bool>(reference))
        << llvm::toString(reference.takeError()) << "\n"
        << diagnostics;

    int64_t m = std::max<int64_t>(1, config.microbatches);
    std::vector<std::vector<distrt::NamedTensor>> inputs;
    for (int64_t mb = 0; mb < m; ++mb) {
      auto one = makeInputs(*reference, "", seed * 31 + mb);
      ASSERT_TRUE(static_cast<bool>(one)) << llvm::toString(one.takeError());
      inputs.push_back(std::move(*one));
    }
    auto session = createSession(*programs, Backend::Local, 1);
    ASSERT_TRUE(static_cast<bool>(session))
        << llvm::toString(session.takeError());
    auto got = (*session)->run(inputs);
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(got->size(), inputs.size());
    for (int64_t mb = 0; mb < m; ++mb) {
      auto expected = runLocal(*reference, inputs[mb], 1);
      ASSERT_TRUE(static_cast<bool>(expected))
          << llvm::toString(expected.takeError());
      ASSERT_EQ((*got)[mb].size(), expected->size());
      for (size_t i = 0; i < expected->size(); ++i) {
        Comparison c = compareTensors((*got)[mb][i].tensor,
                                      (*expected)[i].tensor, 1e-4, 1e-5);
        EXPECT_TRUE(c.ok) << "microbatch " << mb << " output " << i << ": "
                          << c.message;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Plans, LayeredGraphTest,
    ::testing::Values(
        Config{"fsdp_dp4", "dp=4", {"fsdp"}, 0, false, 4, 2},
        Config{"fsdp_tp_dp2_tp2", "dp=2,tp=2", {"fsdp", "tp"}, 0, false, 4, 2},
        Config{"tp_uneven_tp3", "tp=3", {"tp"}, 0, false, 2, 2},
        Config{"dp_tp_sp_2x2", "dp=2,tp=2", {"dp", "tp", "sp"}, 0, false, 4, 2},
        Config{"pp_fsdp", "pp=2,dp=2", {"fsdp"}, 2, false, 2, 3},
        Config{"pp_dp_tp", "pp=2,dp=2,tp=2", {"dp", "tp"}, 2, false, 2, 3},
        Config{"pp3", "pp=3", {}, 2, false, 1, 4},
        Config{"cnn_fsdp_small_batch", "dp=2", {"fsdp"}, 0, true, 1, 2},
        Config{"cnn_tp", "tp=2", {"tp"}, 0, true, 2, 2},
        Config{"cnn_pp_fsdp", "pp=2,dp=2", {"fsdp"}, 2, true, 2, 2}),
    [](const ::testing::TestParamInfo<Config> &info) {
      return info.param.name;
    });

} // namespace
