//===- TrainConfig.cpp - parse training configs -----------------*- C++ -*-===//
#include "distopt/Training/TrainConfig.h"
#include "distopt/Support/YamlReader.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace distopt;
namespace yaml = llvm::yaml;

double LrSchedule::at(int64_t step, double lr, int64_t runSteps) const {
  if (kind == Kind::Constant)
    return lr;
  // torch's linear warm-up (LambdaLR-style step/warmup) then cosine decay.
  if (step < warmupSteps)
    return lr * static_cast<double>(step + 1) /
           static_cast<double>(warmupSteps);
  int64_t total = totalSteps > 0 ? totalSteps : runSteps;
  double span = std::max<int64_t>(1, total - warmupSteps);
  double progress =
      std::min(1.0, static_cast<double>(step - warmupSteps) / span);
  return minLr + (lr - minLr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

namespace {

class ConfigParser {
public:
  ConfigParser(YamlReader &r, TrainConfig &c) : r(r), c(c) {}
  LogicalResult parse(yaml::Node *root);

private:
  FailureOr<double> positive(yaml::Node *node, const Twine &what) {
    FailureOr<double> v = r.number(node, what);
    if (failed(v))
      return failure();
    if (*v <= 0)
      return r.error(node) << what << " must be positive, got " << *v;
    return v;
  }
  FailureOr<double> nonNegative(yaml::Node *node, const Twine &what) {
    FailureOr<double> v = r.number(node, what);
    if (failed(v))
      return failure();
    if (*v < 0)
      return r.error(node) << what << " must not be negative, got " << *v;
    return v;
  }
  LogicalResult parseLoss(yaml::Node *node);
  LogicalResult parseOptimizer(yaml::Node *node);
  LogicalResult parseSchedule(yaml::Node *node);
  LogicalResult parsePrecision(yaml::Node *node);
  LogicalResult parseLossScale(yaml::Node *node);
  FailureOr<std::string> dtype(yaml::Node *node, StringRef key);
  LogicalResult parseTolerance(yaml::Node *node);
  LogicalResult
  parseGlobs(yaml::Node *node, const Twine &what,
             std::vector<std::pair<std::string, mlir::LocationAttr>> &out);

  YamlReader &r;
  TrainConfig &c;
};

} // namespace

LogicalResult ConfigParser::parseLoss(yaml::Node *node) {
  auto map = r.mapping(node, "loss must be a mapping, e.g. {kind: "
                             "cross_entropy, ignore_index: -100}");
  if (failed(map))
    return failure();
  return r.forEachKey(
      *map,
      [&](StringRef key, yaml::Node *keyNode,
          yaml::Node *value) -> LogicalResult {
        if (key == "kind") {
          FailureOr<std::string> kind = r.scalar(value, "loss.kind");
          if (failed(kind))
            return failure();
          if (*kind == "cross_entropy")
            c.loss.kind = LossSpec::Kind::CrossEntropy;
          else if (*kind == "mse")
            c.loss.kind = LossSpec::Kind::MeanSquaredError;
          else if (*kind == "model")
            c.loss.kind = LossSpec::Kind::ModelOutput;
          else
            return r.error(value) << "unknown loss '" << *kind
                                  << "'; expected cross_entropy, mse or model";
          return success();
        }
        if (key == "ignore_index") {
          FailureOr<int64_t> v = r.integer(value, "loss.ignore_index");
          if (failed(v))
            return failure();
          c.loss.ignoreIndex = *v;
          return success();
        }
        return r.error(keyNode) << "unknown key 'loss." << key
                                << "'; expected kind or ignore_index";
      });
}

LogicalResult ConfigParser::parseOptimizer(yaml::Node *node) {
  auto map = r.mapping(node, "optimizer must be a mapping, e.g. {kind: "
                             "adamw, lr: 3e-3}");
  if (failed(map))
    return failure();
  OptimizerSpec &o = c.optimizer;
  bool sawKind = false;
  if (failed(r.forEachKey(
          *map,
          [&](StringRef key, yaml::Node *keyNode,
              yaml::Node *value) -> LogicalResult {
            if (key == "kind") {
              FailureOr<std::string> kind = r.scalar(value, "optimizer.kind");
              if (failed(kind))
                return failure();
              sawKind = true;
              if (*kind == "sgd")
                o.kind = OptimizerSpec::Kind::SGD;
              else if (*kind == "adam")
                o.kind = OptimizerSpec::Kind::Adam;
              else if (*kind == "adamw")
                o.kind = OptimizerSpec::Kind::AdamW;
              else
                return r.error(value) << "unknown optimizer '" << *kind
                                      << "'; expected sgd, adam or adamw";
              return success();
            }
            if (key == "lr") {
              FailureOr<double> v = positive(value, "optimizer.lr");
              if (failed(v))
                return failure();
              o.lr = *v;
              return success();
            }
            if (key == "betas") {
              FailureOr<std::vector<double>> v =
                  r.numberList(value, "optimizer.betas");
              if (failed(v))
                return failure();
              if (v->size() != 2 || (*v)[0] < 0 || (*v)[0] >= 1 ||
                  (*v)[1] < 0 || (*v)[1] >= 1)
                return r.error(value)
                       << "optimizer.betas must be two numbers in [0, 1)";
              o.beta1 = (*v)[0];
              o.beta2 = (*v)[1];
              return success();
            }
            if (key == "eps") {
              FailureOr<double> v = positive(value, "optimizer.eps");
              if (failed(v))
                return failure();
              o.eps = *v;
              return success();
            }
            if (key == "weight_decay" || key == "momentum") {
              FailureOr<double> v = nonNegative(value, "optimizer." + key);
              if (failed(v))
                return failure();
              (key == "momentum" ? o.momentum : o.weightDecay) = *v;
              return success();
            }
            if (key == "nesterov") {
              FailureOr<bool> v = r.boolean(value, "optimizer.nesterov");
              if (failed(v))
                return failure();
              o.nesterov = *v;
              return success();
            }
            return r.error(keyNode) << "unknown key 'optimizer." << key
                                    << "'; expected kind, lr, betas, eps, "
                                       "weight_decay, momentum "
                                       "or nesterov";
          })))
    return failure();
  if (!sawKind)
    return r.error(node) << "optimizer needs a kind: sgd, adam or adamw";
  if (o.nesterov && (o.kind != OptimizerSpec::Kind::SGD || o.momentum == 0))
    return r.error(node) << "nesterov needs sgd with momentum";
  return success();
}

LogicalResult ConfigParser::parseSchedule(yaml::Node *node) {
  auto map = r.mapping(node, "lr_schedule must be a mapping, e.g. {kind: "
                             "cosine, warmup_steps: 100}");
  if (failed(map))
    return failure();
  LrSchedule &s = c.schedule;
  return r.forEachKey(
      *map,
      [&](StringRef key, yaml::Node *keyNode,
          yaml::Node *value) -> LogicalResult {
        if (key == "kind") {
          FailureOr<std::string> kind = r.scalar(value, "lr_schedule.kind");
          if (failed(kind))
            return failure();
          if (*kind == "constant")
            s.kind = LrSchedule::Kind::Constant;
          else if (*kind == "cosine")
            s.kind = LrSchedule::Kind::WarmupCosine;
          else
            return r.error(value) << "unknown lr_schedule '" << *kind
                                  << "'; expected constant or cosine";
          return success();
        }
        if (key == "warmup_steps" || key == "total_steps") {
          FailureOr<int64_t> v = r.integer(value, "lr_schedule." + key);
          if (failed(v))
            return failure();
          if (*v < 0)
            return r.error(value)
                   << "lr_schedule." << key << " must not be negative";
          (key == "warmup_steps" ? s.warmupSteps : s.totalSteps) = *v;
          return success();
        }
        if (key == "min_lr") {
          FailureOr<double> v = nonNegative(value, "lr_schedule.min_lr");
          if (failed(v))
            return failure();
          s.minLr = *v;
          return success();
        }
        return r.error(keyNode)
               << "unknown key 'lr_schedule." << key
               << "'; expected kind, warmup_steps, total_steps "
                  "or min_lr";
      });
}

FailureOr<std::string> ConfigParser::dtype(yaml::Node *node, StringRef key) {
  FailureOr<std::string> v = r.scalar(node, "precision." + key);
  if (failed(v))
    return failure();
  if (*v != "f32" && *v != "bf16" && *v != "f16")
    return r.error(node) << "unknown dtype '" << *v << "' for precision."
                         << key << "; expected f32, bf16 or f16";
  return v;
}

/// `v` as printf's %g writes it (0.5, 65536, 1e+30).
static std::string shortNumber(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", v);
  return s;
}

/// `loss_scale: dynamic`, a fixed positive number, or a dynamic scaler's
/// settings: {initial, growth_interval, hysteresis, min}.
LogicalResult ConfigParser::parseLossScale(yaml::Node *node) {
  PrecisionPolicy &p = c.precision;
  if (auto *s = dyn_cast<yaml::ScalarNode>(node)) {
    SmallString<16> storage;
    if (s->getValue(storage) == "dynamic") {
      p.lossScale = PrecisionPolicy::LossScale::Dynamic;
      return success();
    }
    FailureOr<double> v = r.number(node, "precision.loss_scale");
    if (failed(v))
      return r.error(node) << "precision.loss_scale must be 'dynamic', a "
                              "positive number, or a mapping such as "
                              "{initial: 65536, growth_interval: 1000}";
    if (!(*v > 0) || !std::isfinite(*v))
      return r.error(node) << "precision.loss_scale must be positive, got "
                           << *v;
    p.lossScale = PrecisionPolicy::LossScale::Fixed;
    p.initialLossScale = *v;
    return success();
  }
  auto map = r.mapping(node, "precision.loss_scale must be 'dynamic', a "
                             "positive number, or a mapping such as "
                             "{initial: 65536, growth_interval: 1000}");
  if (failed(map))
    return failure();
  p.lossScale = PrecisionPolicy::LossScale::Dynamic;
  yaml::Node *initialNode = nullptr, *minNode = nullptr;
  if (failed(r.forEachKey(
          *map,
          [&](StringRef key, yaml::Node *keyNode,
              yaml::Node *value) -> LogicalResult {
            std::string what = ("precision.loss_scale." + key).str();
            if (key == "initial" || key == "min") {
              FailureOr<double> v = r.number(value, what);
              if (failed(v))
                return failure();
              if (!(*v > 0) || !std::isfinite(*v))
                return r.error(value) << what << " must be positive, got "
                                      << *v;
              (key == "initial" ? p.initialLossScale : p.minLossScale) = *v;
              (key == "initial" ? initialNode : minNode) = value;
              return success();
            }
            if (key == "growth_interval" || key == "hysteresis") {
              FailureOr<int64_t> v = r.integer(value, what);
              if (failed(v))
                return failure();
              if (*v < 1)
                return r.error(value) << what << " must be at least 1, got "
                                      << *v;
              (key == "hysteresis" ? p.hysteresis : p.growthInterval) = *v;
              return success();
            }
            return r.error(keyNode)
                   << "unknown key '" << what
                   << "'; expected initial, growth_interval, hysteresis or "
                      "min";
          })))
    return failure();
  if (p.initialLossScale < p.minLossScale)
    return r.error(initialNode ? initialNode : minNode)
           << "precision.loss_scale.initial " << shortNumber(p.initialLossScale)
           << " is below its min " << shortNumber(p.minLossScale);
  return success();
}

/// Bits of a dtype that parsePrecision accepted.
static int dtypeBits(StringRef dtype) { return dtype == "f32" ? 32 : 16; }

LogicalResult ConfigParser::parsePrecision(yaml::Node *node) {
  PrecisionPolicy &p = c.precision;
  p.loc = r.locOf(node);
  // The shorthand: `precision: bf16` is compute bf16 with everything else
  // f32 (Megatron's and FSDP2's bf16 with f32 main parameters and grads).
  if (isa<yaml::ScalarNode>(node)) {
    FailureOr<std::string> v = dtype(node, "compute");
    if (failed(v))
      return failure();
    if (*v == "f16")
      return r.error(node)
             << "precision: f16 needs a loss scale; write precision: "
                "{compute: f16, loss_scale: dynamic}";
    p.compute = *v;
    return success();
  }
  auto map = r.mapping(node, "precision must be bf16, f32, or a mapping "
                             "such as {compute: bf16, keep_f32: [\"lm_head\"]}");
  if (failed(map))
    return failure();
  yaml::Node *masterNode = nullptr, *scaleNode = nullptr, *stateNode = nullptr,
             *reduceNode = nullptr;
  if (failed(r.forEachKey(
          *map,
          [&](StringRef key, yaml::Node *keyNode,
              yaml::Node *value) -> LogicalResult {
            if (key == "compute" || key == "master" || key == "reduce" ||
                key == "optimizer_state") {
              FailureOr<std::string> v = dtype(value, key);
              if (failed(v))
                return failure();
              if (key == "compute")
                p.compute = *v;
              else if (key == "master")
                p.master = *v, masterNode = value;
              else if (key == "reduce")
                p.reduce = *v, reduceNode = value;
              else
                p.optimizerState = *v, stateNode = value;
              return success();
            }
            if (key == "keep_f32")
              return parseGlobs(value, "precision.keep_f32", p.keepF32);
            if (key == "compute_copies") {
              FailureOr<std::string> v =
                  r.scalar(value, "precision.compute_copies");
              if (failed(v))
                return failure();
              if (*v != "state" && *v != "per_step")
                return r.error(value)
                       << "precision.compute_copies must be state (kept "
                          "between steps) or per_step (cast from the "
                          "masters each step), not '"
                       << *v << "'";
              p.keepComputeCopies = *v == "state";
              return success();
            }
            if (key == "loss_scale") {
              scaleNode = keyNode;
              return parseLossScale(value);
            }
            return r.error(keyNode)
                   << "unknown key 'precision." << key
                   << "'; expected compute, master, reduce, optimizer_state, "
                      "keep_f32, loss_scale or compute_copies";
          })))
    return failure();
  if (masterNode && dtypeBits(p.master) < dtypeBits(p.compute))
    return r.error(masterNode)
           << "precision.master " << p.master << " is narrower than compute "
           << p.compute << "; the optimizer would update what forward "
           << "rounds away";
  bool f16 = p.compute == "f16";
  if (scaleNode && !f16)
    return r.error(scaleNode)
           << "precision.loss_scale applies to compute: f16 only; "
           << p.compute << " has f32's exponent range and needs none";
  if (f16 && p.lossScale == PrecisionPolicy::LossScale::None)
    return r.error(node) << "precision compute: f16 needs a loss_scale (f16 "
                            "gradients underflow without one): a number, or "
                            "dynamic";
  // Unscaled gradients underflow in f16 as they would in f16 compute.
  if (reduceNode && p.reduce == "f16" && !f16)
    return r.error(reduceNode)
           << "precision.reduce: f16 needs compute: f16 and its loss scale "
              "(unscaled gradients underflow in f16); reduce in bf16 instead";
  // Adam's second moment (squared gradients) underflows f16's range.
  if (stateNode && p.optimizerState == "f16")
    return r.error(stateNode)
           << "precision.optimizer_state: f16 would underflow Adam's second "
              "moment; use bf16 (or f32)";
  // f16 parameters lose every update below half an f16 ulp and overflow
  // beyond 65504: they need f32 masters.
  if (masterNode && p.master == "f16")
    return r.error(masterNode)
           << "precision.master: f16 is not supported; only f32 or bf16 "
              "(f16 training keeps f32 masters)";
  if (masterNode && p.master == "bf16" && p.compute != "bf16")
    return r.error(masterNode)
           << "precision.master: bf16 needs compute: bf16 (the parameters "
              "are what forward reads), not "
           << p.compute;
  return success();
}

LogicalResult ConfigParser::parseTolerance(yaml::Node *node) {
  auto map = r.mapping(node, "tolerance must be a mapping, e.g. {loss_rtol: "
                             "2e-3, probe_atol: 1e-2, probe_rtol: 1e-2}");
  if (failed(map))
    return failure();
  CaseTolerance &t = c.tolerance;
  return r.forEachKey(
      *map,
      [&](StringRef key, yaml::Node *keyNode,
          yaml::Node *value) -> LogicalResult {
        double *slot = key == "loss_rtol"    ? &t.lossRtol
                       : key == "probe_atol" ? &t.probeAtol
                       : key == "probe_rtol" ? &t.probeRtol
                                             : nullptr;
        if (!slot)
          return r.error(keyNode) << "unknown key 'tolerance." << key
                                  << "'; expected loss_rtol, probe_atol or "
                                     "probe_rtol";
        FailureOr<double> v = nonNegative(value, "tolerance." + key);
        if (failed(v))
          return failure();
        *slot = *v;
        return success();
      });
}

LogicalResult ConfigParser::parseGlobs(
    yaml::Node *node, const Twine &what,
    std::vector<std::pair<std::string, mlir::LocationAttr>> &out) {
  auto *seq = dyn_cast_or_null<yaml::SequenceNode>(node);
  if (!seq)
    return r.error(node) << what << " must be a list of name patterns";
  for (yaml::Node &item : *seq) {
    FailureOr<std::string> s = r.scalar(&item, what + " entries");
    if (failed(s))
      return failure();
    out.push_back({*s, r.locOf(&item)});
  }
  return success();
}

LogicalResult ConfigParser::parse(yaml::Node *root) {
  auto map = r.mapping(root, "a training config must be a mapping (output, "
                             "loss, optimizer, steps, ...)");
  if (failed(map))
    return failure();
  bool sawOutput = false, sawOptimizer = false;
  if (failed(r.forEachKey(
          *map,
          [&](StringRef key, yaml::Node *keyNode,
              yaml::Node *value) -> LogicalResult {
            if (key == "output") {
              FailureOr<std::string> v = r.scalar(value, "output");
              if (failed(v))
                return failure();
              c.output = *v;
              sawOutput = true;
              return success();
            }
            if (key == "loss")
              return parseLoss(value);
            if (key == "optimizer") {
              sawOptimizer = true;
              return parseOptimizer(value);
            }
            if (key == "lr_schedule")
              return parseSchedule(value);
            if (key == "no_decay")
              return parseGlobs(value, "no_decay", c.noDecay);
            if (key == "frozen")
              return parseGlobs(value, "frozen", c.frozen);
            if (key == "recompute")
              return parseGlobs(value, "recompute", c.recompute);
            if (key == "clip_grad_norm") {
              FailureOr<double> v = positive(value, "clip_grad_norm");
              if (failed(v))
                return failure();
              c.clipGradNorm = *v;
              return success();
            }
            if (key == "steps") {
              FailureOr<int64_t> v = r.integer(value, "steps");
              if (failed(v))
                return failure();
              if (*v <= 0)
                return r.error(value) << "steps must be positive, got " << *v;
              c.steps = *v;
              return success();
            }
            if (key == "gradient_accumulation_steps") {
              FailureOr<int64_t> v =
                  r.integer(value, "gradient_accumulation_steps");
              if (failed(v))
                return failure();
              if (*v <= 0 || *v > kMaxAccumulationSteps)
                return r.error(value)
                       << "gradient_accumulation_steps must be between 1 and "
                       << kMaxAccumulationSteps << ", got " << *v;
              c.accumulationSteps = *v;
              return success();
            }
            if (key == "precision")
              return parsePrecision(value);
            if (key == "tolerance")
              return parseTolerance(value);
            // A case's f32 losses, kept beside a mixed-precision case's
            // for comparison; nothing checks them.
            if (key == "losses_f32")
              return failed(r.numberList(value, "losses_f32"))
                         ? failure()
                         : success();
            if (key == "losses" || key == "loss_scales" || key == "skipped" ||
                key == "dropped_tokens") {
              FailureOr<std::vector<double>> v = r.numberList(value, key);
              if (failed(v))
                return failure();
              (key == "losses"        ? c.losses
               : key == "loss_scales" ? c.lossScales
               : key == "skipped"     ? c.skipped
                                      : c.droppedTokens) = *v;
              return success();
            }
            return r.error(keyNode)
                   << "unknown key '" << key
                   << "'; expected output, loss, optimizer, lr_schedule, "
                      "no_decay, frozen, recompute, clip_grad_norm, steps, "
                      "gradient_accumulation_steps, precision, losses, "
                      "loss_scales, skipped, dropped_tokens or tolerance";
          })))
    return failure();
  if (!sawOutput)
    return r.error(root) << "a training config needs 'output': the model "
                            "output the loss reads";
  if (!sawOptimizer)
    return r.error(root) << "a training config needs an 'optimizer'";
  if (!c.losses.empty() && static_cast<int64_t>(c.losses.size()) != c.steps)
    return r.error(root) << "'losses' has " << c.losses.size()
                         << " entries but 'steps' is " << c.steps;
  if (!c.droppedTokens.empty() &&
      static_cast<int64_t>(c.droppedTokens.size()) != c.steps)
    return r.error(root) << "'dropped_tokens' has " << c.droppedTokens.size()
                         << " entries but 'steps' is " << c.steps;
  return success();
}

FailureOr<TrainConfig> distopt::parseTrainConfig(MLIRContext *ctx,
                                                 StringRef path) {
  YamlReader reader(ctx, path);
  TrainConfig config;
  config.path = path.str();
  config.loc = FileLineColLoc::get(ctx, path, 0, 0);
  ConfigParser parser(reader, config);
  if (failed(reader.parse("training config", [&](yaml::Node *root) {
        return parser.parse(root);
      })))
    return failure();
  return config;
}
