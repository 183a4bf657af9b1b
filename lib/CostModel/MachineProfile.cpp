//===- MachineProfile.cpp - the rates of the machine a plan is for --------===//
#include "distopt/CostModel/MachineProfile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

using namespace distopt::cost;
using llvm::ArrayRef;
using llvm::StringRef;

GemmClass distopt::cost::classifyGemm(int64_t m, int64_t n, int64_t k) {
  int64_t smallest = std::min({m, n, k});
  if (smallest >= kLargeGemmMin)
    return GemmClass::Large;
  return smallest >= kMediumGemmMin ? GemmClass::Medium : GemmClass::Small;
}

StringRef distopt::cost::gemmClassName(GemmClass c) {
  switch (c) {
  case GemmClass::Small:
    return "small";
  case GemmClass::Medium:
    return "medium";
  case GemmClass::Large:
    return "large";
  }
  return "large";
}

const AlphaBeta &LinkProfile::at(int64_t n) const {
  const AlphaBeta *best = &groups.front();
  for (const AlphaBeta &g : groups)
    if (g.groupSize <= n)
      best = &g;
  return *best;
}

double MachineProfile::gemmRate(StringRef dtype, GemmClass c) const {
  auto it = gemmTflops.find(dtype.str());
  if (it == gemmTflops.end())
    it = gemmTflops.find("f32");
  return it == gemmTflops.end() ? 0 : it->second[static_cast<int>(c)];
}

StringRef MachineProfile::linkKindFor(ArrayRef<std::string> axisNames,
                                      ArrayRef<int64_t> axisSizes,
                                      int64_t axis) const {
  if (axis < static_cast<int64_t>(axisNames.size()))
    if (auto it = axes.find(axisNames[axis]); it != axes.end())
      return it->second;
  // Inner axes stay within a node while their product fits in one.
  int64_t inner = 1;
  for (int64_t a = axisSizes.size() - 1; a >= axis; --a)
    inner *= axisSizes[a];
  return inner <= devicesPerNode ? intraNode : interNode;
}

//===----------------------------------------------------------------------===//
// Built-in profiles
//===----------------------------------------------------------------------===//

/// A GEMM rate per class from the large-GEMM rate: medium products reach
/// about 40% of it and small ones 10% (rough: short products do not fill a
/// GPU's units; calibrate for measured figures).
static std::array<double, 3> fromPeak(double large) {
  return {0.1 * large, 0.4 * large, large};
}

static LinkProfile link(StringRef backend, double alphaUs, double betaGBps) {
  return LinkProfile{backend.str(), {AlphaBeta{0, alphaUs, betaGBps}}};
}

/// This CPU, conservatively: `dist-run --calibrate` on the 2-core AVX2
/// development machine (AMD EPYC, one thread per rank, the local backend)
/// measured rates above these; they are rounded down so that plans made with
/// them do not promise more than a small machine gives.
static MachineProfile cpuProfile() {
  MachineProfile p;
  p.name = "cpu";
  p.device = "host CPU, one thread per rank (conservative)";
  p.notes = "built in: rounded down from dist-run --calibrate on a 2-core "
            "AVX2 server; calibrate for this machine's figures";
  p.gemmTflops["f32"] = {0.005, 0.03, 0.04};
  p.gemmTflops["f64"] = {0.003, 0.015, 0.02};
  p.memoryGBps = 10;
  p.devicesPerNode = 1 << 20; // every rank on this machine
  p.links["local"] = link("local", 10, 5);
  p.intraNode = p.interNode = "local";
  return p;
}

/// NVIDIA H100 SXM5 and H200 SXM, from NVIDIA's public datasheets: dense
/// (not sparse) tensor-core rates, BF16 and FP16 989 TFLOP/s, FP64 tensor
/// core 67, FP32 67 (CUDA cores; TF32 tensor cores, 495, are opt-in);
/// HBM3 3.35 TB/s (H100) and HBM3e 4.8 TB/s (H200); NVLink 4 900 GB/s per
/// GPU in both directions, 450 GB/s each way; between nodes one ConnectX-7
/// NDR InfiniBand port per GPU, 400 Gb/s = 50 GB/s each way. The latencies
/// (5 us in a node, 10 us across) are typical NCCL small-message times, not
/// datasheet figures.
static MachineProfile hopperProfile(StringRef name, StringRef device,
                                    double memoryGBps) {
  MachineProfile p;
  p.name = name.str();
  p.device = device.str();
  p.notes = "built in: datasheet peaks for large GEMMs (medium 40%, small "
            "10% of them), NVLink 4 in a node of 8, NDR InfiniBand across";
  p.gemmTflops["bf16"] = fromPeak(989);
  p.gemmTflops["f16"] = fromPeak(989);
  p.gemmTflops["f32"] = fromPeak(67);
  p.gemmTflops["f64"] = fromPeak(67);
  p.memoryGBps = memoryGBps;
  p.devicesPerNode = 8;
  p.links["nvlink"] = link("nccl", 5, 450);
  p.links["ib"] = link("nccl", 10, 50);
  p.intraNode = "nvlink";
  p.interNode = "ib";
  return p;
}

ArrayRef<StringRef> distopt::cost::builtinMachineNames() {
  static const StringRef names[] = {"cpu", "h100", "h200"};
  return names;
}

llvm::Expected<MachineProfile>
distopt::cost::builtinMachineProfile(StringRef name) {
  if (name == "cpu")
    return cpuProfile();
  if (name == "h100")
    return hopperProfile("h100", "NVIDIA H100 SXM5 80GB", 3350);
  if (name == "h200")
    return hopperProfile("h200", "NVIDIA H200 SXM 141GB", 4800);
  return llvm::createStringError(
      "unknown built-in machine profile '" + name.str() + "'; choose " +
      llvm::join(builtinMachineNames(), ", ") + " or give a JSON file");
}

const MachineProfile &distopt::cost::defaultMachineProfile() {
  static const MachineProfile profile = cpuProfile();
  return profile;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// The range of every figure in a profile (TFLOP/s, GB/s, microseconds).
static constexpr double kMinFigure = 1e-9, kMaxFigure = 1e12;
static constexpr const char *kMinFigureText = "1e-9";
static constexpr const char *kMaxFigureText = "1e12";

namespace {

/// The line each key of a well-formed JSON text is on, by its path in the
/// parser's notation (`links.fast.groups[1].size`; the root is ""), so that
/// errors about values can name file:line. llvm::json keeps no locations.
class LineIndex {
public:
  explicit LineIndex(StringRef text) : text(text) {
    skipSpace();
    value("");
  }

  /// The line of `key`, or of the nearest enclosing value the index has
  /// (a key spelt with escapes is not recorded under its decoded name).
  unsigned lineOf(StringRef key) const {
    while (true) {
      if (auto it = lines.find(key.str()); it != lines.end())
        return it->second;
      size_t cut = key.find_last_of(".[");
      if (key.empty() || cut == StringRef::npos)
        return lines.count("") ? lines.at("") : 1;
      key = key.take_front(cut);
    }
  }

private:
  void skipSpace() {
    while (pos < text.size() && llvm::isSpace(text[pos])) {
      if (text[pos] == '\n')
        ++line;
      ++pos;
    }
  }
  /// A string's raw characters (escapes left as they are written).
  std::string string() {
    std::string s;
    ++pos; // the opening quote
    while (pos < text.size() && text[pos] != '"') {
      if (text[pos] == '\\' && pos + 1 < text.size())
        s += text[pos++];
      s += text[pos++];
    }
    ++pos;
    return s;
  }
  void value(const std::string &path) {
    lines.emplace(path, line); // an object member's key line comes first
    if (pos >= text.size())
      return;
    char c = text[pos];
    if (c == '"') {
      string();
    } else if (c == '{' || c == '[') {
      ++pos;
      for (int64_t i = 0;; ++i) {
        skipSpace();
        if (pos >= text.size() || text[pos] == '}' || text[pos] == ']')
          break;
        std::string child;
        if (c == '{') {
          std::string key = string();
          child = path.empty() ? key : path + "." + key;
          lines.emplace(child, line);
          skipSpace();
          ++pos; // ':'
          skipSpace();
        } else {
          child = path + "[" + std::to_string(i) + "]";
        }
        value(child);
        skipSpace();
        if (pos < text.size() && text[pos] == ',')
          ++pos;
      }
      ++pos;
    } else {
      // A number or a literal.
      while (pos < text.size() && !llvm::isSpace(text[pos]) &&
             !StringRef(",]}").contains(text[pos]))
        ++pos;
    }
  }

  StringRef text;
  size_t pos = 0;
  unsigned line = 1;
  std::map<std::string, unsigned> lines;
};

/// Reads one profile object, naming the file, the line and the key in
/// every error.
class ProfileParser {
public:
  explicit ProfileParser(StringRef path) : path(path) {}

  llvm::Expected<MachineProfile> parse(StringRef text);

private:
  /// "file:line: message", the line where `key` is (or its enclosing
  /// object, for a key that is missing).
  llvm::Error at(StringRef key, const llvm::Twine &message) {
    unsigned line = index ? index->lineOf(key) : 1;
    return llvm::createStringError(path + ":" + std::to_string(line) + ": " +
                                   message.str());
  }
  llvm::Error error(const llvm::Twine &key, const llvm::Twine &message) {
    std::string k = key.str();
    return at(k, k + ": " + message.str());
  }
  llvm::Error checkKeys(const llvm::json::Object &object,
                        const llvm::Twine &where, ArrayRef<StringRef> known);
  llvm::Expected<double> number(const llvm::json::Value &v,
                                const llvm::Twine &key, bool zeroAllowed);
  llvm::Expected<std::string> string(const llvm::json::Value &v,
                                     const llvm::Twine &key);
  llvm::Expected<AlphaBeta> alphaBeta(const llvm::json::Object &o,
                                      const llvm::Twine &key);
  llvm::Expected<LinkProfile> linkProfile(const llvm::json::Value &v,
                                          const std::string &key);
  llvm::Error linkKnown(const MachineProfile &p, const std::string &kind,
                        const llvm::Twine &key);

  std::string path;
  std::optional<LineIndex> index;
};

} // namespace

llvm::Error ProfileParser::checkKeys(const llvm::json::Object &object,
                                     const llvm::Twine &where,
                                     ArrayRef<StringRef> known) {
  std::string prefix = where.str();
  for (const auto &kv : object) {
    if (llvm::is_contained(known, StringRef(kv.first)))
      continue;
    std::string key = (prefix.empty() ? "" : prefix + ".") + kv.first.str();
    return at(key, "unknown key '" + key + "'; expected " +
                       llvm::join(known, ", "));
  }
  return llvm::Error::success();
}

llvm::Expected<double> ProfileParser::number(const llvm::json::Value &v,
                                             const llvm::Twine &key,
                                             bool zeroAllowed) {
  std::optional<double> d = v.getAsNumber();
  const char *want =
      zeroAllowed ? "a non-negative number" : "a positive number";
  if (!d)
    return error(key, llvm::Twine("must be ") + want);
  char got[32];
  std::snprintf(got, sizeof(got), "%g", *d);
  if (*d < 0 || (!zeroAllowed && *d == 0))
    return error(key, llvm::Twine("must be ") + want + " (got " + got + ")");
  // Rates and latencies outside these bounds are typos (and would make
  // times infinite or zero).
  if (!std::isfinite(*d) || *d > kMaxFigure || (*d != 0 && *d < kMinFigure))
    return error(key, llvm::Twine("is out of range (got ") + got +
                          "; expected " + (zeroAllowed ? "0 or " : "") +
                          kMinFigureText +
                          " to " + kMaxFigureText + ")");
  return *d;
}

llvm::Expected<std::string> ProfileParser::string(const llvm::json::Value &v,
                                                  const llvm::Twine &key) {
  std::optional<StringRef> s = v.getAsString();
  if (!s)
    return error(key, "must be a string");
  return s->str();
}

llvm::Expected<AlphaBeta> ProfileParser::alphaBeta(const llvm::json::Object &o,
                                                   const llvm::Twine &key) {
  AlphaBeta ab;
  const llvm::json::Value *alpha = o.get("alpha_us");
  const llvm::json::Value *beta = o.get("beta_gbps");
  if (!alpha)
    return error(key, "missing key 'alpha_us' (latency, microseconds)");
  if (!beta)
    return error(key, "missing key 'beta_gbps' (bandwidth, GB/s)");
  auto a = number(*alpha, key + ".alpha_us", /*zeroAllowed=*/true);
  if (!a)
    return a.takeError();
  auto b = number(*beta, key + ".beta_gbps", /*zeroAllowed=*/false);
  if (!b)
    return b.takeError();
  ab.alphaUs = *a;
  ab.betaGBps = *b;
  return ab;
}

llvm::Expected<LinkProfile>
ProfileParser::linkProfile(const llvm::json::Value &v, const std::string &key) {
  const llvm::json::Object *o = v.getAsObject();
  if (!o)
    return error(key, "must be an object with backend, and alpha_us and "
                      "beta_gbps or groups");
  if (auto e = checkKeys(*o, key, {"backend", "alpha_us", "beta_gbps", "groups"}))
    return std::move(e);
  LinkProfile link;
  if (const llvm::json::Value *b = o->get("backend")) {
    auto s = string(*b, key + ".backend");
    if (!s)
      return s.takeError();
    if (*s != "local" && *s != "mpi" && *s != "nccl")
      return error(key + ".backend",
                   "unknown backend '" + *s + "'; expected local, mpi, nccl");
    link.backend = *s;
  }
  const llvm::json::Value *groups = o->get("groups");
  if (!groups) {
    auto ab = alphaBeta(*o, key);
    if (!ab)
      return ab.takeError();
    link.groups.push_back(*ab);
    return link;
  }
  if (o->get("alpha_us") || o->get("beta_gbps"))
    return error(key, "give either groups or alpha_us and beta_gbps, not both");
  const llvm::json::Array *list = groups->getAsArray();
  if (!list || list->empty())
    return error(key + ".groups",
                 "must be a non-empty list of {size, alpha_us, beta_gbps}");
  for (size_t i = 0; i < list->size(); ++i) {
    std::string at = key + ".groups[" + std::to_string(i) + "]";
    const llvm::json::Object *g = (*list)[i].getAsObject();
    if (!g)
      return error(at, "must be an object {size, alpha_us, beta_gbps}");
    if (auto e = checkKeys(*g, at, {"size", "alpha_us", "beta_gbps"}))
      return std::move(e);
    const llvm::json::Value *size = g->get("size");
    if (!size)
      return error(at, "missing key 'size' (the group size measured)");
    std::optional<int64_t> n = size->getAsInteger();
    if (!n || *n < 1)
      return error(at + ".size", "must be a positive integer");
    auto ab = alphaBeta(*g, at);
    if (!ab)
      return ab.takeError();
    ab->groupSize = *n;
    for (const AlphaBeta &seen : link.groups)
      if (seen.groupSize == *n)
        return error(at + ".size",
                     "group size " + std::to_string(*n) + " appears twice");
    link.groups.push_back(*ab);
  }
  llvm::sort(link.groups, [](const AlphaBeta &a, const AlphaBeta &b) {
    return a.groupSize < b.groupSize;
  });
  return link;
}

llvm::Error ProfileParser::linkKnown(const MachineProfile &p,
                                    const std::string &kind,
                                    const llvm::Twine &key) {
  if (p.links.count(kind))
    return llvm::Error::success();
  std::vector<std::string> names;
  for (const auto &[name, l] : p.links)
    names.push_back(name);
  return error(key, "unknown link kind '" + kind + "'; the profile's links: " +
                        llvm::join(names, ", "));
}

llvm::Expected<MachineProfile> ProfileParser::parse(StringRef text) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json) {
    // llvm::json says "[line:column, byte=N]: what", where the column
    // (from 0) is just past the character it stopped at: that character's
    // column counted from 1. Put the place first, as compilers do.
    std::string message = llvm::toString(json.takeError());
    StringRef rest(message);
    unsigned line = 0, column = 0;
    if (rest.consume_front("[") && !rest.consumeInteger(10, line) &&
        rest.consume_front(":") && !rest.consumeInteger(10, column)) {
      size_t end = rest.find("]: ");
      if (end != StringRef::npos)
        return llvm::createStringError(
            path + ":" + std::to_string(line) + ":" + std::to_string(column) +
            ": malformed JSON: " + rest.drop_front(end + 3).str());
    }
    return llvm::createStringError(path + ": malformed JSON: " + message);
  }
  index.emplace(text);
  const llvm::json::Object *root = json->getAsObject();
  if (!root)
    return at("", "expected a JSON object (see docs/cost-model.md for the "
                  "format)");
  static const StringRef topKeys[] = {"base",
                                      "device",
                                      "notes",
                                      "gemm_tflops",
                                      "memory_gbps",
                                      "kernel_ns_per_element",
                                      "devices_per_node",
                                      "links",
                                      "intra_node",
                                      "inter_node",
                                      "axes"};
  if (auto e = checkKeys(*root, "", ArrayRef<StringRef>(topKeys)))
    return std::move(e);

  MachineProfile p;
  bool hasBase = false;
  if (const llvm::json::Value *base = root->get("base")) {
    auto name = string(*base, "base");
    if (!name)
      return name.takeError();
    auto builtin = builtinMachineProfile(*name);
    if (!builtin)
      return error("base", llvm::toString(builtin.takeError()));
    p = std::move(*builtin);
    hasBase = true;
  }
  p.name = path;
  // Without a base every part of the machine must be given.
  for (StringRef required :
       {"device", "gemm_tflops", "memory_gbps", "links", "intra_node"})
    if (!hasBase && !root->get(required))
      return at("", "missing key '" + required.str() +
                        "' (or a 'base' built-in profile to take it from)");

  if (const llvm::json::Value *v = root->get("device")) {
    auto s = string(*v, "device");
    if (!s)
      return s.takeError();
    p.device = *s;
  }
  if (const llvm::json::Value *v = root->get("notes")) {
    auto s = string(*v, "notes");
    if (!s)
      return s.takeError();
    p.notes = *s;
  }
  if (const llvm::json::Value *v = root->get("gemm_tflops")) {
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      return error("gemm_tflops", "must map dtypes (f32, bf16, ...) to "
                                  "TFLOP/s or to {small, medium, large}");
    static const StringRef dtypes[] = {"f64", "f32", "bf16", "f16"};
    for (const auto &[dtypeKey, rate] : *o) {
      std::string dtype = dtypeKey.str();
      std::string key = "gemm_tflops." + dtype;
      if (!llvm::is_contained(dtypes, StringRef(dtype)))
        return error(key, "unknown dtype; expected " +
                                llvm::join(ArrayRef<StringRef>(dtypes), ", "));
      std::array<double, 3> rates;
      if (const llvm::json::Object *classes = rate.getAsObject()) {
        if (auto e = checkKeys(*classes, key, {"small", "medium", "large"}))
          return std::move(e);
        for (GemmClass c :
             {GemmClass::Small, GemmClass::Medium, GemmClass::Large}) {
          StringRef cls = gemmClassName(c);
          const llvm::json::Value *r = classes->get(cls);
          if (!r)
            return error(key, "missing key '" + cls.str() + "'");
          auto n = number(*r, key + "." + cls, /*zeroAllowed=*/false);
          if (!n)
            return n.takeError();
          rates[static_cast<int>(c)] = *n;
        }
      } else {
        auto n = number(rate, key, /*zeroAllowed=*/false);
        if (!n)
          return n.takeError();
        rates = {*n, *n, *n};
      }
      p.gemmTflops[dtype] = rates;
    }
    if (!p.gemmTflops.count("f32"))
      return error("gemm_tflops", "missing key 'f32' (dtypes the profile "
                                  "does not list run at f32's rate)");
  }
  if (const llvm::json::Value *v = root->get("memory_gbps")) {
    auto n = number(*v, "memory_gbps", /*zeroAllowed=*/false);
    if (!n)
      return n.takeError();
    p.memoryGBps = *n;
  }
  if (const llvm::json::Value *v = root->get("kernel_ns_per_element")) {
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      return error("kernel_ns_per_element",
                   "must map kernel names (softmax, transpose, ...) to "
                   "nanoseconds per element");
    p.kernelNsPerElement.clear();
    for (const auto &[kernel, ns] : *o) {
      std::string key = "kernel_ns_per_element." + kernel.str();
      auto n = number(ns, key, /*zeroAllowed=*/false);
      if (!n)
        return n.takeError();
      p.kernelNsPerElement[kernel.str()] = *n;
    }
  }
  if (const llvm::json::Value *v = root->get("devices_per_node")) {
    std::optional<int64_t> n = v->getAsInteger();
    if (!n || *n < 1)
      return error("devices_per_node", "must be a positive integer");
    p.devicesPerNode = *n;
  }
  if (const llvm::json::Value *v = root->get("links")) {
    const llvm::json::Object *o = v->getAsObject();
    if (!o || o->empty())
      return error("links", "must map link kinds (nvlink, ib, ...) to their "
                            "alpha and beta");
    for (const auto &[name, l] : *o) {
      auto parsed = linkProfile(l, "links." + name.str());
      if (!parsed)
        return parsed.takeError();
      p.links[name.str()] = std::move(*parsed);
    }
  }
  for (StringRef key : {"intra_node", "inter_node"}) {
    const llvm::json::Value *v = root->get(key);
    if (!v)
      continue;
    auto kind = string(*v, key);
    if (!kind)
      return kind.takeError();
    (key == "intra_node" ? p.intraNode : p.interNode) = *kind;
    if (key == "intra_node" && !root->get("inter_node") && !hasBase)
      p.interNode = *kind;
  }
  if (auto e = linkKnown(p, p.intraNode, "intra_node"))
    return std::move(e);
  if (auto e = linkKnown(p, p.interNode, "inter_node"))
    return std::move(e);
  if (const llvm::json::Value *v = root->get("axes")) {
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      return error("axes", "must map mesh axis names to link kinds");
    for (const auto &[axis, kindValue] : *o) {
      std::string key = "axes." + axis.str();
      auto kind = string(kindValue, key);
      if (!kind)
        return kind.takeError();
      if (auto e = linkKnown(p, *kind, key))
        return std::move(e);
      p.axes[axis.str()] = *kind;
    }
  }
  return p;
}

llvm::Expected<MachineProfile>
distopt::cost::parseMachineProfile(StringRef text, StringRef path) {
  return ProfileParser(path).parse(text);
}

llvm::Expected<MachineProfile>
distopt::cost::loadMachineProfile(StringRef nameOrPath) {
  if (llvm::is_contained(builtinMachineNames(), nameOrPath))
    return builtinMachineProfile(nameOrPath);
  auto buffer = llvm::MemoryBuffer::getFile(nameOrPath);
  if (!buffer)
    return llvm::createStringError(
        "cannot read machine profile '" + nameOrPath.str() +
        "': " + buffer.getError().message() + " (built-in profiles: " +
        llvm::join(builtinMachineNames(), ", ") + ")");
  return parseMachineProfile((*buffer)->getBuffer(), nameOrPath);
}

llvm::Expected<std::shared_ptr<const MachineProfile>>
distopt::cost::loadSharedMachineProfile(StringRef nameOrPath) {
  if (nameOrPath.empty())
    return std::make_shared<const MachineProfile>(defaultMachineProfile());
  auto p = loadMachineProfile(nameOrPath);
  if (!p)
    return p.takeError();
  return std::make_shared<const MachineProfile>(std::move(*p));
}

void distopt::cost::writeMachineProfile(const MachineProfile &p,
                                        llvm::raw_ostream &os) {
  llvm::json::Object gemm;
  for (const auto &[dtype, rates] : p.gemmTflops)
    gemm[dtype] = llvm::json::Object{{"small", rates[0]},
                                     {"medium", rates[1]},
                                     {"large", rates[2]}};
  llvm::json::Object links;
  for (const auto &[name, l] : p.links) {
    llvm::json::Object link;
    if (l.groups.size() == 1 && l.groups.front().groupSize == 0) {
      // One figure for every group size.
      link["alpha_us"] = l.groups.front().alphaUs;
      link["beta_gbps"] = l.groups.front().betaGBps;
    } else {
      llvm::json::Array groups;
      for (const AlphaBeta &g : l.groups)
        groups.push_back(
            llvm::json::Object{{"size", std::max<int64_t>(1, g.groupSize)},
                               {"alpha_us", g.alphaUs},
                               {"beta_gbps", g.betaGBps}});
      link["groups"] = std::move(groups);
    }
    if (!l.backend.empty())
      link["backend"] = l.backend;
    links[name] = std::move(link);
  }
  llvm::json::Object axes;
  for (const auto &[axis, kind] : p.axes)
    axes[axis] = kind;
  llvm::json::Object root{{"device", p.device},
                          {"gemm_tflops", std::move(gemm)},
                          {"memory_gbps", p.memoryGBps},
                          {"devices_per_node", p.devicesPerNode},
                          {"links", std::move(links)},
                          {"intra_node", p.intraNode},
                          {"inter_node", p.interNode}};
  if (!p.notes.empty())
    root["notes"] = p.notes;
  if (!p.kernelNsPerElement.empty()) {
    llvm::json::Object kernels;
    for (const auto &[kernel, ns] : p.kernelNsPerElement)
      kernels[kernel] = ns;
    root["kernel_ns_per_element"] = std::move(kernels);
  }
  if (!axes.empty())
    root["axes"] = std::move(axes);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
