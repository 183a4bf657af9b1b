//===- CostModelTest.cpp - the cost model's formulas ------------*- C++ -*-===//
//
// Collective volumes and times, op times and the links of mesh axes against
// values computed by hand from the formulas in docs/cost-model.md.
//
//===----------------------------------------------------------------------===//
#include "distopt/CostModel/CostModel.h"

#include <gtest/gtest.h>

using namespace distopt::cost;

namespace {

constexpr double MiB = 1024.0 * 1024.0;

TEST(CostModelTest, RingVolumes) {
  // 1 MiB per member on 4 members: a ring all-reduce sends 2 * 3/4 of it,
  // reduce-scatter and all-to-all 3/4; an all-gather of an 8 MiB result
  // over 8 members sends the 7 pieces of 1 MiB it does not own.
  EXPECT_DOUBLE_EQ(bytesSent(Collective::AllReduce, MiB, 4), 1.5 * MiB);
  EXPECT_DOUBLE_EQ(bytesSent(Collective::ReduceScatter, MiB, 4), 0.75 * MiB);
  EXPECT_DOUBLE_EQ(bytesSent(Collective::AllToAll, MiB, 4), 0.75 * MiB);
  EXPECT_DOUBLE_EQ(bytesSent(Collective::AllGather, 8 * MiB, 8), 7 * MiB);
  EXPECT_DOUBLE_EQ(bytesSent(Collective::Permute, MiB, 4), MiB);
  EXPECT_DOUBLE_EQ(bytesSent(Collective::Send, MiB, 2), MiB);
  EXPECT_DOUBLE_EQ(bytesSent(Collective::Recv, MiB, 2), 0);
  // A group of one moves nothing.
  EXPECT_DOUBLE_EQ(bytesSent(Collective::AllReduce, MiB, 1), 0);
}

TEST(CostModelTest, CollectiveTimeIsAlphaPlusBytesOverBeta) {
  AlphaBeta link{0, 10, 5}; // 10 us, 5 GB/s
  // All-reduce of 1e6 bytes on 4: 1.5e6 bytes at 5e3 bytes/us = 300 us.
  EXPECT_DOUBLE_EQ(collectiveUs(Collective::AllReduce, 1e6, 4, link), 310);
  // All-gather to 1e6 bytes on 2: half of it, 100 us.
  EXPECT_DOUBLE_EQ(collectiveUs(Collective::AllGather, 1e6, 2, link), 110);
  // A receive sends nothing but waits for the 1e6 bytes it receives.
  EXPECT_DOUBLE_EQ(collectiveUs(Collective::Recv, 1e6, 2, link), 210);
  EXPECT_DOUBLE_EQ(collectiveUs(Collective::Send, 1e6, 2, link), 210);
}

TEST(CostModelTest, CollectiveNames) {
  EXPECT_EQ(collectiveNamed("all_reduce"), Collective::AllReduce);
  EXPECT_EQ(collectiveNamed("collective_permute"), Collective::Permute);
  EXPECT_EQ(collectiveNamed("recv"), Collective::Recv);
  EXPECT_FALSE(collectiveNamed("local_slice"));
}

TEST(CostModelTest, GemmShapeClasses) {
  EXPECT_EQ(classifyGemm(64, 4096, 4096), GemmClass::Small);
  EXPECT_EQ(classifyGemm(4096, 127, 4096), GemmClass::Small);
  EXPECT_EQ(classifyGemm(128, 4096, 4096), GemmClass::Medium);
  EXPECT_EQ(classifyGemm(8192, 768, 3072), GemmClass::Medium);
  EXPECT_EQ(classifyGemm(1024, 1024, 1024), GemmClass::Large);
}

TEST(CostModelTest, OpTimeIsARoofline) {
  MachineProfile m;
  m.gemmTflops["f32"] = {0.01, 0.02, 0.04};
  m.gemmTflops["bf16"] = {1, 2, 4};
  m.memoryGBps = 10;
  // A 1024-cube f32 product: 2^31 FLOPs at 0.04 TFLOP/s = 2^31 / 4e4 us;
  // its 12 MiB of operands and result at 10 GB/s take less.
  OpWork gemm;
  gemm.flops = 2.0 * 1024 * 1024 * 1024;
  gemm.bytes = 3 * 4 * MiB;
  gemm.gemm = true;
  gemm.dtype = "f32";
  gemm.gemmClass = GemmClass::Large;
  EXPECT_DOUBLE_EQ(computeUs(m, gemm), 2147483648.0 / 4e4);
  // In bf16 (4 TFLOP/s) the bytes dominate: 12 MiB / 1e4 bytes per us.
  gemm.dtype = "bf16";
  EXPECT_DOUBLE_EQ(computeUs(m, gemm), 12 * MiB / 1e4);
  // A dtype the profile lacks runs at f32's rate; a small product at the
  // small class's.
  gemm.dtype = "f16";
  gemm.gemmClass = GemmClass::Small;
  EXPECT_DOUBLE_EQ(computeUs(m, gemm), 2147483648.0 / 1e4);
  // Anything else: its bytes at the memory bandwidth, whatever its FLOPs.
  OpWork add;
  add.flops = 1e9;
  add.bytes = 3e6;
  EXPECT_DOUBLE_EQ(computeUs(m, add), 300);
}

TEST(CostModelTest, MeasuredKernelsAndViews) {
  MachineProfile m;
  m.gemmTflops["f32"] = {0.01, 0.02, 0.04};
  m.memoryGBps = 10;
  m.kernelNsPerElement = {{"softmax", 2.5}, {"matmul", 100}};
  // An f32 softmax of 1e6 elements: 2.5 ns each, not its 8e6 bytes'
  // 800 us at the bandwidth.
  OpWork softmax;
  softmax.kernel = "softmax";
  softmax.elements = 1e6;
  softmax.bytes = 8e6;
  EXPECT_DOUBLE_EQ(computeUs(m, softmax), 2500);
  // In bf16 the f32 kernel's figure does not hold: its bytes again.
  softmax.dtype = "bf16";
  softmax.bytes = 4e6;
  EXPECT_DOUBLE_EQ(computeUs(m, softmax), 400);
  // A kernel the profile has no figure for: its bytes.
  OpWork transpose = softmax;
  transpose.dtype = "f32";
  transpose.kernel = "transpose";
  EXPECT_DOUBLE_EQ(computeUs(m, transpose), 400);
  // Products keep their GEMM rates (a figure under their name is not
  // theirs).
  OpWork gemm;
  gemm.kernel = "matmul";
  gemm.gemm = true;
  gemm.flops = 4e8;
  gemm.elements = 1e6;
  gemm.gemmClass = GemmClass::Large;
  EXPECT_DOUBLE_EQ(computeUs(m, gemm), 1e4);
  // A view moves nothing.
  OpWork reshape = transpose;
  reshape.view = true;
  EXPECT_DOUBLE_EQ(computeUs(m, reshape), 0);
}

TEST(CostModelTest, LinkEntryByGroupSize) {
  LinkProfile link{"local", {{2, 5, 10}, {4, 8, 6}, {8, 12, 4}}};
  EXPECT_EQ(link.at(2).groupSize, 2);
  EXPECT_EQ(link.at(3).groupSize, 2);
  EXPECT_EQ(link.at(4).groupSize, 4);
  EXPECT_EQ(link.at(64).groupSize, 8);
  // Smaller than any measured group: the smallest.
  EXPECT_EQ(link.at(1).groupSize, 2);
}

TEST(CostModelTest, InnerAxesInANodeOuterAxesAcross) {
  auto h100 = builtinMachineProfile("h100");
  ASSERT_TRUE(static_cast<bool>(h100)) << llvm::toString(h100.takeError());
  auto machine = std::make_shared<const MachineProfile>(std::move(*h100));
  // dp=4 x tp=8: tp's 8 devices fit a node of 8, dp's 32 do not.
  MeshCost mesh(machine, {"dp", "tp"}, {4, 8});
  EXPECT_EQ(mesh.linkKind(1), "nvlink");
  EXPECT_EQ(mesh.linkKind(0), "ib");
  EXPECT_DOUBLE_EQ(mesh.axisLink(1).betaGBps, 450);
  EXPECT_DOUBLE_EQ(mesh.axisLink(0).betaGBps, 50);
  EXPECT_FALSE(mesh.uniform());
  // Over both axes at once: 32 members, as slow as InfiniBand. An
  // all-reduce of 32 MB sends 2 * 31/32 * 32e6 = 62e6 bytes: 10 us + 1240 us.
  EXPECT_EQ(mesh.groupSize({0, 1}), 32);
  EXPECT_DOUBLE_EQ(mesh.collectiveUs(Collective::AllReduce, 32e6, {0, 1}),
                   10 + 62e6 / 50e3);
  // A mesh inside one node is uniform.
  EXPECT_TRUE(MeshCost(machine, {"dp", "tp"}, {2, 4}).uniform());
}

TEST(CostModelTest, AxesMappedByName) {
  auto h100 = builtinMachineProfile("h100");
  ASSERT_TRUE(static_cast<bool>(h100));
  h100->axes["pp"] = "ib";
  auto machine = std::make_shared<const MachineProfile>(std::move(*h100));
  // pp is named; tp follows the node rule.
  MeshCost mesh(machine, {"pp", "tp"}, {2, 2});
  EXPECT_EQ(mesh.linkKind(0), "ib");
  EXPECT_EQ(mesh.linkKind(1), "nvlink");
}

TEST(CostModelTest, BuiltinProfiles) {
  // The datasheet figures the accelerator profiles are built from.
  auto h200 = builtinMachineProfile("h200");
  ASSERT_TRUE(static_cast<bool>(h200));
  EXPECT_DOUBLE_EQ(h200->memoryGBps, 4800);
  EXPECT_DOUBLE_EQ(h200->gemmRate("bf16", GemmClass::Large), 989);
  EXPECT_DOUBLE_EQ(h200->gemmRate("f32", GemmClass::Large), 67);
  EXPECT_DOUBLE_EQ(h200->links.at("nvlink").at(8).betaGBps, 450);
  auto h100 = builtinMachineProfile("h100");
  ASSERT_TRUE(static_cast<bool>(h100));
  EXPECT_DOUBLE_EQ(h100->memoryGBps, 3350);
  EXPECT_EQ(defaultMachineProfile().name, "cpu");
  auto none = builtinMachineProfile("a100");
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(llvm::toString(none.takeError()),
            "unknown built-in machine profile 'a100'; choose cpu, h100, h200 "
            "or give a JSON file");
}

} // namespace
