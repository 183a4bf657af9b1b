// RunLocal with communication kernels, fault propagation, and the input
// scatter / output assembly helpers.
#include <gtest/gtest.h>

#include <chrono>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

std::shared_ptr<const Program> Make(const ProgramBuilder& b) {
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), StrCat("rank-", b.Build().rank(), ".pb"), ".", &p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return p;
}

// Rank r's local x: shape [2, sizes[r], 3] with value 100*r + flat index.
Tensor Piece(int r, int64_t s) { return Iota({2, s, 3}, 1.0f, 100.0f * r); }

TEST(RunLocal, AllGatherAlongInnerDimUnevenSizes) {
  const std::vector<int64_t> sizes = {1, 3, 2};
  std::vector<std::shared_ptr<const Program>> progs;
  std::vector<std::vector<Tensor>> ins;
  for (int r = 0; r < 3; ++r) {
    ProgramBuilder b(r, 3);
    int x = b.Input("x", DType::kF32, {2, sizes[r], 3});
    int y = b.Apply("all_gather", {x}, DType::kF32, {2, 6, 3},
                    {{"dim", AttrInt(1)}, {"sizes", AttrInts(sizes)}}, {0, 1, 2});
    b.Output("y", y);
    progs.push_back(Make(b));
    ins.push_back({Piece(r, sizes[r])});
  }
  std::vector<std::vector<Tensor>> out;
  Status st = RunLocal(progs, ins, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> want;
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int64_t i = 0; i < sizes[r]; ++i)
        for (int c = 0; c < 3; ++c) want.push_back(100.0f * r + (b * sizes[r] + i) * 3 + c);
  for (int r = 0; r < 3; ++r) ExpectF32(out[r][0], {2, 6, 3}, want);
}

TEST(RunLocal, ReduceScatterAlongInnerDim) {
  const std::vector<int64_t> sizes = {3, 1};
  std::vector<std::shared_ptr<const Program>> progs;
  std::vector<std::vector<Tensor>> ins;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    int x = b.Input("x", DType::kI64, {2, 4});
    int y =
        b.Apply("reduce_scatter", {x}, DType::kI64, {2, sizes[r]},
                {{"dim", AttrInt(1)}, {"sizes", AttrInts(sizes)}, {"reduction", AttrString("sum")}},
                {0, 1});
    b.Output("y", y);
    progs.push_back(Make(b));
    ins.push_back({I64({2, 4}, {1 + r, 2, 3, 4, 5, 6, 7, 8 * (r + 1)})});
  }
  std::vector<std::vector<Tensor>> out;
  ASSERT_TRUE(RunLocal(progs, ins, &out).ok());
  // Sum: [[3, 4, 6, 8], [10, 12, 14, 24]]; rank 0 gets cols 0..2, rank 1 col 3.
  EXPECT_EQ(Vec<int64_t>(out[0][0]), (std::vector<int64_t>{3, 4, 6, 10, 12, 14}));
  EXPECT_EQ(Vec<int64_t>(out[1][0]), (std::vector<int64_t>{8, 24}));
}

TEST(RunLocal, AllToAllSplitInnerConcatOuter) {
  // Global [4, 4]: rank r starts with rows [2r, 2r+2) (all columns) and ends
  // with all rows of columns [2r, 2r+2): split_dim 1, concat_dim 0.
  std::vector<std::shared_ptr<const Program>> progs;
  std::vector<std::vector<Tensor>> ins;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    int x = b.Input("x", DType::kF32, {2, 4});
    int y = b.Apply("all_to_all", {x}, DType::kF32, {4, 2},
                    {{"split_dim", AttrInt(1)},
                     {"concat_dim", AttrInt(0)},
                     {"split_sizes", AttrInts({2, 2})},
                     {"concat_sizes", AttrInts({2, 2})}},
                    {0, 1});
    b.Output("y", y);
    progs.push_back(Make(b));
    ins.push_back({Iota({2, 4}, 1.0f, 8.0f * r)});  // rows 2r, 2r+1 of iota(4x4)
  }
  std::vector<std::vector<Tensor>> out;
  Status st = RunLocal(progs, ins, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectF32(out[0][0], {4, 2}, {0, 1, 4, 5, 8, 9, 12, 13});
  ExpectF32(out[1][0], {4, 2}, {2, 3, 6, 7, 10, 11, 14, 15});
}

TEST(RunLocal, CollectivePermuteZerosAndSendRecvPipeline) {
  std::vector<std::shared_ptr<const Program>> progs;
  std::vector<std::vector<Tensor>> ins;
  for (int r = 0; r < 3; ++r) {
    ProgramBuilder b(r, 3);
    int x = b.Input("x", DType::kI32, {2});
    // 0 -> 1, 1 -> 2; rank 0 receives nothing (zeros).
    int y = b.Apply("collective_permute", {x}, DType::kI32, {2},
                    {{"sources", AttrInts({0, 1})}, {"targets", AttrInts({1, 2})}}, {0, 1, 2});
    b.Output("y", y);
    // Pipeline: rank 0 sends x+y to rank 1, which forwards to rank 2.
    if (r == 0) {
      int s = b.Apply("add", {x, y}, DType::kI32, {2});
      b.Op("send", {s}, {}, {{"peer", AttrInt(1)}, {"tag", AttrInt(7)}});
    } else if (r == 1) {
      int got = b.Apply("recv", {}, DType::kI32, {2}, {{"peer", AttrInt(0)}, {"tag", AttrInt(7)}});
      b.Op("send", {got}, {}, {{"peer", AttrInt(2)}, {"tag", AttrInt(7)}});
    } else {
      int got = b.Apply("recv", {}, DType::kI32, {2}, {{"peer", AttrInt(1)}, {"tag", AttrInt(7)}});
      b.Output("piped", got);
    }
    progs.push_back(Make(b));
    ins.push_back({I32({2}, {10 * (r + 1), 10 * (r + 1) + 1})});
  }
  std::vector<std::vector<Tensor>> out;
  Status st = RunLocal(progs, ins, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Vec<int32_t>(out[0][0]), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(Vec<int32_t>(out[1][0]), (std::vector<int32_t>{10, 11}));
  EXPECT_EQ(Vec<int32_t>(out[2][0]), (std::vector<int32_t>{20, 21}));
  EXPECT_EQ(Vec<int32_t>(out[2][1]), (std::vector<int32_t>{10, 11}));
}

TEST(RunLocal, ToPartialThenAllReduceRestoresTheValue) {
  for (const char* red : {"sum", "max", "avg", "prod"}) {
    std::vector<std::shared_ptr<const Program>> progs;
    std::vector<std::vector<Tensor>> ins;
    for (int r = 0; r < 3; ++r) {
      ProgramBuilder b(r, 3);
      int x = b.Input("x", DType::kF32, {3});
      int p =
          b.Apply("to_partial", {x}, DType::kF32, {3}, {{"reduction", AttrString(red)}}, {2, 0, 1});
      int y =
          b.Apply("all_reduce", {p}, DType::kF32, {3}, {{"reduction", AttrString(red)}}, {0, 1, 2});
      b.Output("p", p);
      b.Output("y", y);
      progs.push_back(Make(b));
      ins.push_back({F32({3}, {1.5f, -2, 4})});
    }
    std::vector<std::vector<Tensor>> out;
    Status st = RunLocal(progs, ins, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    SCOPED_TRACE(red);
    for (int r = 0; r < 3; ++r) ExpectF32(out[r][1], {3}, {1.5f, -2, 4});
    // Group [2, 0, 1]: rank 2 is the first member and keeps x for sum/prod.
    const std::string s = red;
    const float other = s == "sum" ? 0.0f : 1.0f;
    const bool keeps_all = s == "max" || s == "avg";
    ExpectF32(out[2][0], {3}, {1.5f, -2, 4});
    for (int r = 0; r < 2; ++r) {
      ExpectF32(
          out[r][0], {3},
          keeps_all ? std::vector<float>{1.5f, -2, 4} : std::vector<float>{other, other, other});
    }
  }
}

TEST(RunLocal, KernelFailureOnOneRankStopsTheOthers) {
  std::vector<std::shared_ptr<const Program>> progs;
  std::vector<std::vector<Tensor>> ins;
  for (int r = 0; r < 4; ++r) {
    ProgramBuilder b(r, 4);
    int data = b.Input("data", DType::kF32, {3, 2});
    int idx = b.Input("idx", DType::kI64, {1});
    int g = b.Apply("gather", {data, idx}, DType::kF32, {1, 2}, {{"axis", AttrInt(0)}});
    b.proto().mutable_instructions(0)->set_location("Gather_12");
    int y = b.Apply("all_reduce", {g}, DType::kF32, {1, 2}, {{"reduction", AttrString("sum")}},
                    {0, 1, 2, 3});
    b.Output("y", y);
    progs.push_back(Make(b));
    ins.push_back({Iota({3, 2}), I64({1}, {r == 3 ? 5 : r % 3})});  // rank 3: index 5 of 3
  }
  LocalRunOptions opts;
  opts.timeout = std::chrono::seconds(60);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<Tensor>> out;
  Status st = RunLocal(progs, ins, &out, opts);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 10.0);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_HAS(st.message(), "rank 3: rank-3.pb: instruction 0 ('gather' at 'Gather_12')");
  EXPECT_HAS(st.message(), "gather index 5");
}

TEST(LocalSession, RunsRepeatedlyWithNewInputsThenRefusesAfterAFailure) {
  // y = all_reduce(sum) of gather(data, idx) over 2 ranks, with sends
  // between the ranks so each run also exercises the mailbox.
  std::vector<std::shared_ptr<const Program>> progs;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    int data = b.Input("data", DType::kF32, {3, 2});
    int idx = b.Input("idx", DType::kI64, {1});
    int g = b.Apply("gather", {data, idx}, DType::kF32, {1, 2}, {{"axis", AttrInt(0)}});
    int y =
        b.Apply("all_reduce", {g}, DType::kF32, {1, 2}, {{"reduction", AttrString("sum")}}, {0, 1});
    b.Output("y", y);
    if (r == 0) {
      b.Op("send", {y}, {}, {{"peer", AttrInt(1)}, {"tag", AttrInt(3)}});
    } else {
      int got =
          b.Apply("recv", {}, DType::kF32, {1, 2}, {{"peer", AttrInt(0)}, {"tag", AttrInt(3)}});
      b.Output("got", got);
    }
    progs.push_back(Make(b));
  }
  LocalRunOptions opts;
  opts.timeout = std::chrono::seconds(60);
  std::unique_ptr<LocalSession> session;
  Status st = LocalSession::Create(progs, opts, &session);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(session->world_size(), 2);
  // Iota({3, 2}) rows: [0 1], [2 3], [4 5].
  for (int64_t k = 0; k < 3; ++k) {
    std::vector<std::vector<Tensor>> ins = {{Iota({3, 2}), I64({1}, {k})},
                                                {Iota({3, 2}), I64({1}, {2 - k})}};
    std::vector<std::vector<Tensor>> out;
    st = session->Run(ins, &out);
    ASSERT_TRUE(st.ok()) << "run " << k << ": " << st.ToString();
    const std::vector<float> want = {4.0f, 6.0f};  // row k + row 2-k
    ExpectF32(out[0][0], {1, 2}, want);
    ExpectF32(out[1][1], {1, 2}, want);
  }
  std::vector<std::vector<Tensor>> bad = {{Iota({3, 2}), I64({1}, {7})},
                                              {Iota({3, 2}), I64({1}, {0})}};
  std::vector<std::vector<Tensor>> out;
  st = session->Run(bad, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_HAS(st.message(), "rank 0:");
  std::vector<std::vector<Tensor>> good = {{Iota({3, 2}), I64({1}, {0})},
                                               {Iota({3, 2}), I64({1}, {0})}};
  st = session->Run(good, &out);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(st.message(), "the local session failed in an earlier run");
}

TEST(RunLocal, MismatchedProgramsAreReported) {
  std::vector<std::shared_ptr<const Program>> progs;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    int x = b.Input("x", DType::kF32, {2});
    int y = r == 0 ? b.Apply("all_reduce", {x}, DType::kF32, {2},
                             {{"reduction", AttrString("max")}}, {0, 1})
                   : b.Apply("all_gather", {x}, DType::kF32, {4},
                             {{"dim", AttrInt(0)}, {"sizes", AttrInts({2, 2})}}, {0, 1});
    b.Output("y", y);
    progs.push_back(Make(b));
  }
  std::vector<std::vector<Tensor>> out;
  Status st = RunLocal(progs, {{Iota({2})}, {Iota({2})}}, &out);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(st.message(), "collective mismatch");
  EXPECT_HAS(st.message(), "all_reduce(max, f32, 2 elements)");

  // Rank 1 has no collective at all: rank 0 learns it finished.
  std::vector<std::shared_ptr<const Program>> progs2 = {progs[0]};
  ProgramBuilder b(1, 2);
  int x = b.Input("x", DType::kF32, {2});
  b.Output("y", b.Apply("neg", {x}, DType::kF32, {2}));
  progs2.push_back(Make(b));
  LocalRunOptions opts;
  opts.timeout = std::chrono::seconds(60);
  st = RunLocal(progs2, {{Iota({2})}, {Iota({2})}}, &out, opts);
  EXPECT_HAS(st.message(), "rank 0: ");
  EXPECT_HAS(st.message(), "rank 1 finished its program");
}

TEST(RunLocal, RejectsWrongRankOrder) {
  ProgramBuilder a(1, 2), b(0, 2);
  std::vector<std::vector<Tensor>> out;
  Status st = RunLocal({Make(a), Make(b)}, {{}, {}}, &out);
  EXPECT_HAS(st.message(), "program 0 ('rank-1.pb') is rank 1 of 2, expected rank 0 of 2");
}

TEST(Assemble, ScatterRunAndAssembleShardedAndReplicated) {
  // Global x [4, 3]: rank r holds rows [2r, 2r+2); y = 2x stays sharded;
  // s = sum over all of x is replicated on both ranks.
  std::vector<std::shared_ptr<const Program>> progs;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    int x = b.Input("x", DType::kF32, {2, 3}, MakeSlice({4, 3}, {2 * r, 0}, {2, 3}));
    int two = b.Constant(F32({}, {2}));
    int y = b.Apply("mul", {x, two}, DType::kF32, {2, 3});
    b.Output("y", y, MakeSlice({4, 3}, {2 * r, 0}, {2, 3}));
    int part = b.Apply("reduce_sum", {x}, DType::kF32, {}, {{"keepdims", AttrInt(0)}});
    int s =
        b.Apply("all_reduce", {part}, DType::kF32, {}, {{"reduction", AttrString("sum")}}, {0, 1});
    b.Output("s", s);
    progs.push_back(Make(b));
  }
  Tensor gx = Iota({4, 3});
  std::vector<std::vector<Tensor>> ins, outs;
  ASSERT_TRUE(ScatterInputs(progs, {{"x", gx}}, &ins).ok());
  ExpectF32(ins[1][0], {2, 3}, {6, 7, 8, 9, 10, 11});
  ASSERT_TRUE(RunLocal(progs, ins, &outs).ok());
  std::vector<NamedTensor> global;
  Status st = AssembleOutputs(progs, outs, &global);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(global.size(), 2u);
  EXPECT_EQ(global[0].name, "y");
  std::vector<float> want;
  for (int i = 0; i < 12; ++i) want.push_back(2.0f * i);
  ExpectF32(global[0].tensor, {4, 3}, want);
  EXPECT_EQ(global[1].name, "s");
  ExpectF32(global[1].tensor, {}, {66});
}

TEST(Assemble, ChunkOrderFeedsMirroredChunksAndAssemblesInTheGlobalOrder) {
  // Global x [1, 8], dimension 1 held as chunks [0, 3, 1, 2] of 2: the
  // program's order is positions 0 1 6 7 2 3 4 5; rank r holds 4 of them.
  std::vector<std::shared_ptr<const Program>> progs;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    int x = b.Input("x", DType::kF32, {1, 4}, MakeSlice({1, 8}, {0, 4 * r}, {1, 4}));
    int two = b.Constant(F32({}, {2}));
    int y = b.Apply("mul", {x, two}, DType::kF32, {1, 4});
    b.Output("y", y, MakeSlice({1, 8}, {0, 4 * r}, {1, 4}));
    proto::RankProgram pr = b.Build();
    for (proto::Argument* a : {pr.mutable_inputs(0), pr.mutable_outputs(0)}) {
      a->mutable_chunk_order()->set_dim(1);
      for (int c : {0, 3, 1, 2}) a->mutable_chunk_order()->add_chunks(c);
    }
    std::shared_ptr<const Program> p;
    Status st = Program::Create(pr, StrCat("rank-", r, ".pb"), ".", &p);
    ASSERT_TRUE(st.ok()) << st.ToString();
    progs.push_back(p);
  }
  std::vector<std::vector<Tensor>> ins, outs;
  ASSERT_TRUE(ScatterInputs(progs, {{"x", Iota({1, 8})}}, &ins).ok());
  ExpectF32(ins[0][0], {1, 4}, {0, 1, 6, 7});
  ExpectF32(ins[1][0], {1, 4}, {2, 3, 4, 5});
  ASSERT_TRUE(RunLocal(progs, ins, &outs).ok());
  std::vector<NamedTensor> global;
  Status st = AssembleOutputs(progs, outs, &global);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectF32(global[0].tensor, {1, 8}, {0, 2, 4, 6, 8, 10, 12, 14});

  // Chunks that are not a permutation are refused when the program loads.
  ProgramBuilder b(0, 1);
  int x = b.Input("x", DType::kF32, {1, 8});
  b.Output("y", x);
  proto::RankProgram pr = b.Build();
  for (int c : {0, 0}) pr.mutable_inputs(0)->mutable_chunk_order()->add_chunks(c);
  pr.mutable_inputs(0)->mutable_chunk_order()->set_dim(1);
  std::shared_ptr<const Program> p;
  EXPECT_HAS(Program::Create(pr, "bad.pb", ".", &p).message(),
             "chunk_order chunks are not a permutation of 0..1");
}

TEST(Assemble, MissingPieceAndBadInputsAreErrors) {
  ProgramBuilder b(0, 1);
  int x = b.Input("x", DType::kF32, {2, 3}, MakeSlice({4, 3}, {0, 0}, {2, 3}));
  b.Output("y", x, MakeSlice({4, 3}, {0, 0}, {2, 3}));
  auto p = Make(b);
  std::vector<NamedTensor> global;
  Status st = AssembleOutputs({p}, {{Iota({2, 3})}}, &global);
  EXPECT_HAS(st.message(), "output 'y': element 6 of the global tensor is held by no rank");
  std::vector<std::vector<Tensor>> ins;
  EXPECT_HAS(ScatterInputs({p}, {{"z", Iota({4, 3})}}, &ins).message(),
             "no global input named 'x'");
  EXPECT_HAS(ScatterInputs({p}, {{"x", Iota({3, 3})}}, &ins).message(), "expects f32[4, 3]");
}

}  // namespace
}  // namespace distrt
