//===- MachineProfileTest.cpp - machine profile files -----------*- C++ -*-===//
//
// The profile parser: a full file, a file on a built-in base, what the
// writer writes reads back the same, and each mistake is one line naming
// the file, the line and the key.
//
//===----------------------------------------------------------------------===//
#include "distopt/CostModel/MachineProfile.h"

#include <gtest/gtest.h>

using namespace distopt::cost;

namespace {

const char *kFull = R"({
  "device": "test GPU",
  "gemm_tflops": {"f32": 50, "bf16": {"small": 100, "medium": 400, "large": 800}},
  "memory_gbps": 3000, "kernel_ns_per_element": {"softmax": 0.75, "transpose": 1.5},
  "devices_per_node": 4,
  "links": {
    "fast": {"backend": "nccl", "groups": [
      {"size": 4, "alpha_us": 8, "beta_gbps": 300},
      {"size": 2, "alpha_us": 6, "beta_gbps": 350}]},
    "slow": {"backend": "mpi", "alpha_us": 20, "beta_gbps": 25}
  },
  "intra_node": "fast",
  "inter_node": "slow",
  "axes": {"pp": "slow"}
})";

std::string errorOf(const std::string &text) {
  auto p = parseMachineProfile(text, "m.json");
  if (p)
    return "parsed";
  return llvm::toString(p.takeError());
}

TEST(MachineProfileTest, ParsesAFullProfile) {
  auto p = parseMachineProfile(kFull, "m.json");
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->name, "m.json");
  EXPECT_EQ(p->device, "test GPU");
  EXPECT_DOUBLE_EQ(p->gemmRate("f32", GemmClass::Small), 50);
  EXPECT_DOUBLE_EQ(p->gemmRate("bf16", GemmClass::Medium), 400);
  EXPECT_DOUBLE_EQ(p->memoryGBps, 3000);
  EXPECT_EQ(p->kernelNsPerElement, (std::map<std::string, double>{
                                       {"softmax", 0.75}, {"transpose", 1.5}}));
  EXPECT_EQ(p->devicesPerNode, 4);
  // Groups sorted by size whatever the file's order.
  const LinkProfile &fast = p->links.at("fast");
  EXPECT_EQ(fast.backend, "nccl");
  ASSERT_EQ(fast.groups.size(), 2u);
  EXPECT_EQ(fast.groups[0].groupSize, 2);
  EXPECT_DOUBLE_EQ(fast.at(4).alphaUs, 8);
  EXPECT_DOUBLE_EQ(p->links.at("slow").at(16).betaGBps, 25);
  EXPECT_EQ(p->axes.at("pp"), "slow");
  // dp=2 x tp=4: tp in a node of 4, dp across; pp named.
  EXPECT_EQ(p->linkKindFor({"dp", "tp"}, {2, 4}, 1), "fast");
  EXPECT_EQ(p->linkKindFor({"dp", "tp"}, {2, 4}, 0), "slow");
  EXPECT_EQ(p->linkKindFor({"pp", "tp"}, {2, 2}, 0), "slow");
}

TEST(MachineProfileTest, WriterRoundTrips) {
  for (llvm::StringRef text :
       {llvm::StringRef(kFull), llvm::StringRef(R"({"base": "h200"})")}) {
    auto p = parseMachineProfile(text, "m.json");
    ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
    std::string written;
    llvm::raw_string_ostream os(written);
    writeMachineProfile(*p, os);
    auto q = parseMachineProfile(written, "m.json");
    ASSERT_TRUE(static_cast<bool>(q))
        << llvm::toString(q.takeError()) << "\n"
        << written;
    EXPECT_EQ(q->device, p->device);
    EXPECT_EQ(q->gemmTflops, p->gemmTflops);
    EXPECT_EQ(q->memoryGBps, p->memoryGBps);
    EXPECT_EQ(q->kernelNsPerElement, p->kernelNsPerElement);
    EXPECT_EQ(q->devicesPerNode, p->devicesPerNode);
    EXPECT_EQ(q->intraNode, p->intraNode);
    EXPECT_EQ(q->interNode, p->interNode);
    EXPECT_EQ(q->axes, p->axes);
    ASSERT_EQ(q->links.size(), p->links.size());
    for (const auto &[name, link] : p->links) {
      const LinkProfile &other = q->links.at(name);
      EXPECT_EQ(other.backend, link.backend);
      for (int64_t n : {1, 2, 3, 4, 8, 64}) {
        EXPECT_EQ(other.at(n).alphaUs, link.at(n).alphaUs) << name << " " << n;
        EXPECT_EQ(other.at(n).betaGBps, link.at(n).betaGBps) << name << " " << n;
      }
    }
  }
}

TEST(MachineProfileTest, ABaseBuiltinFillsTheRest) {
  // An H100 cluster whose data axis crosses nodes whatever the mesh.
  auto p = parseMachineProfile(R"({"base": "h100", "axes": {"dp": "ib"}})",
                               "cluster.json");
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->name, "cluster.json");
  EXPECT_DOUBLE_EQ(p->memoryGBps, 3350);
  EXPECT_EQ(p->linkKindFor({"dp", "tp"}, {2, 2}, 0), "ib");
  EXPECT_EQ(p->linkKindFor({"dp", "tp"}, {2, 2}, 1), "nvlink");
  EXPECT_EQ(errorOf(R"({"base": "tpu"})"),
            "m.json:1: base: unknown built-in machine profile 'tpu'; choose "
            "cpu, h100, h200 or give a JSON file");
}

TEST(MachineProfileTest, MissingFields) {
  EXPECT_EQ(errorOf(R"({"device": "x", "gemm_tflops": {"f32": 1},
                        "links": {"l": {"alpha_us": 1, "beta_gbps": 1}},
                        "intra_node": "l"})"),
            "m.json:1: missing key 'memory_gbps' (or a 'base' built-in "
            "profile to take it from)");
  EXPECT_EQ(errorOf(R"({"device": "x", "gemm_tflops": {"bf16": 1},
                        "memory_gbps": 1, "intra_node": "l",
                        "links": {"l": {"alpha_us": 1, "beta_gbps": 1}}})"),
            "m.json:1: gemm_tflops: missing key 'f32' (dtypes the profile does "
            "not list run at f32's rate)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "gemm_tflops": {"f32": {"small": 1,
                        "large": 2}}})"),
            "m.json:1: gemm_tflops.f32: missing key 'medium'");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"alpha_us": 1}}})"),
            "m.json:1: links.l: missing key 'beta_gbps' (bandwidth, GB/s)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"groups": [
                        {"alpha_us": 1, "beta_gbps": 2}]}}})"),
            "m.json:2: links.l.groups[0]: missing key 'size' (the group size "
            "measured)");
}

TEST(MachineProfileTest, NegativeAndZeroRates) {
  EXPECT_EQ(errorOf(R"({"base": "cpu", "gemm_tflops": {"f32": {"small": 1,
                        "medium": 2, "large": -3}}})"),
            "m.json:2: gemm_tflops.f32.large: must be a positive number (got "
            "-3)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "memory_gbps": 0})"),
            "m.json:1: memory_gbps: must be a positive number (got 0)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"alpha_us": -1,
                        "beta_gbps": 5}}})"),
            "m.json:1: links.l.alpha_us: must be a non-negative number (got "
            "-1)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "memory_gbps": "fast"})"),
            "m.json:1: memory_gbps: must be a positive number");
  EXPECT_EQ(
      errorOf(R"({"base": "cpu", "kernel_ns_per_element": {"softmax": 0}})"),
      "m.json:1: kernel_ns_per_element.softmax: must be a positive "
      "number (got 0)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "kernel_ns_per_element": [1]})"),
            "m.json:1: kernel_ns_per_element: must map kernel names (softmax, "
            "transpose, ...) to nanoseconds per element");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "devices_per_node": 0})"),
            "m.json:1: devices_per_node: must be a positive integer");
  // Figures outside 1e-9 .. 1e12 (or beyond a double) are typos.
  EXPECT_EQ(errorOf(R"({"base": "cpu", "memory_gbps": 1e400})"),
            "m.json:1: memory_gbps: is out of range (got inf; expected 1e-9 "
            "to 1e12)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"alpha_us": 1e13,
                        "beta_gbps": 1}}})"),
            "m.json:1: links.l.alpha_us: is out of range (got 1e+13; "
            "expected 0 or 1e-9 to 1e12)");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"alpha_us": 1,
                        "beta_gbps": 1e-12}}})"),
            "m.json:2: links.l.beta_gbps: is out of range (got 1e-12; "
            "expected 1e-9 to 1e12)");
  // A link whose alpha is zero is fine (an ideal link).
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"alpha_us": 0,
                        "beta_gbps": 5}}})"),
            "parsed");
}

TEST(MachineProfileTest, UnknownLinkKinds) {
  EXPECT_EQ(errorOf(R"({"base": "h100", "axes": {"dp": "infiniband"}})"),
            "m.json:1: axes.dp: unknown link kind 'infiniband'; the profile's "
            "links: ib, nvlink");
  EXPECT_EQ(errorOf(R"({"base": "h100", "inter_node": "ethernet"})"),
            "m.json:1: inter_node: unknown link kind 'ethernet'; the profile's "
            "links: ib, nvlink");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"backend": "gloo",
                        "alpha_us": 1, "beta_gbps": 1}}})"),
            "m.json:1: links.l.backend: unknown backend 'gloo'; expected local, "
            "mpi, nccl");
}

TEST(MachineProfileTest, UnknownKeysAndMalformedFiles) {
  EXPECT_EQ(
      errorOf(R"({"base": "cpu", "memory_gpbs": 5})"),
      "m.json:1: unknown key 'memory_gpbs'; expected base, device, notes, "
      "gemm_tflops, memory_gbps, kernel_ns_per_element, devices_per_node, "
      "links, intra_node, inter_node, axes");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "gemm_tflops": {"fp32": 1}})"),
            "m.json:1: gemm_tflops.fp32: unknown dtype; expected f64, f32, "
            "bf16, f16");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"alpha_us": 1,
                        "beta_gbps": 1, "groups": []}}})"),
            "m.json:1: links.l: give either groups or alpha_us and beta_gbps, "
            "not both");
  EXPECT_EQ(errorOf(R"({"base": "cpu", "links": {"l": {"groups": [
                        {"size": 2, "alpha_us": 1, "beta_gbps": 1},
                        {"size": 2, "alpha_us": 1, "beta_gbps": 1}]}}})"),
            "m.json:3: links.l.groups[1].size: group size 2 appears twice");
  EXPECT_EQ(errorOf("[1, 2]"), "m.json:1: expected a JSON object (see "
                               "docs/cost-model.md for the format)");
  // The comma in column 15 ends the text.
  EXPECT_EQ(errorOf(R"({"base": "cpu",)"),
            "m.json:1:15: malformed JSON: Expected object key");
}

/// kFull with `from` replaced by `to`.
std::string fullWith(llvm::StringRef from, llvm::StringRef to) {
  std::string text = kFull;
  size_t at = text.find(from.str());
  EXPECT_NE(at, std::string::npos) << from.str();
  return text.replace(at, from.size(), to.str());
}

TEST(MachineProfileTest, ErrorsNameTheLine) {
  // Lines of kFull counted by hand: "slow" is on line 10, the second
  // group on 9, devices_per_node on 5, axes on 14.
  EXPECT_EQ(errorOf(fullWith(R"("beta_gbps": 25)", R"("beta_gbps": 0)")),
            "m.json:10: links.slow.beta_gbps: must be a positive number (got "
            "0)");
  EXPECT_EQ(errorOf(fullWith(R"({"size": 2,)", R"({"size": 0,)")),
            "m.json:9: links.fast.groups[1].size: must be a positive integer");
  EXPECT_EQ(errorOf(fullWith("devices_per_node", "devices_per_nod")),
            "m.json:5: unknown key 'devices_per_nod'; expected base, device, "
            "notes, gemm_tflops, memory_gbps, kernel_ns_per_element, "
            "devices_per_node, links, intra_node, inter_node, axes");
  EXPECT_EQ(errorOf(fullWith(R"("pp": "slow")", R"("pp": "slower")")),
            "m.json:14: axes.pp: unknown link kind 'slower'; the profile's "
            "links: fast, slow");
  // A missing key: the line of the object it is missing from.
  EXPECT_EQ(errorOf(fullWith(R"("memory_gbps": 3000,)", "")),
            "m.json:1: missing key 'memory_gbps' (or a 'base' built-in "
            "profile to take it from)");
  // Malformed JSON: line and column of the mistake, the second comma of
  // `  "memory_gbps": 3000,,` (column 23).
  EXPECT_EQ(
      errorOf(fullWith(R"("memory_gbps": 3000,)", R"("memory_gbps": 3000,,)")),
      "m.json:4:23: malformed JSON: Expected object key");
}

TEST(MachineProfileTest, LoadNamesTheFile) {
  auto p = loadMachineProfile("no-such-dir/profile.json");
  ASSERT_FALSE(static_cast<bool>(p));
  std::string message = llvm::toString(p.takeError());
  EXPECT_EQ(message.rfind("cannot read machine profile "
                          "'no-such-dir/profile.json': ",
                          0),
            0u)
      << message;
  auto builtin = loadMachineProfile("h200");
  ASSERT_TRUE(static_cast<bool>(builtin));
  EXPECT_EQ(builtin->name, "h200");
}

} // namespace
