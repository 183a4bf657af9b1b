//===- DataSourceTest.cpp - each data source against hand-made files ------===//
#include "distopt/Data/DataSource.h"
#include "distopt/Data/Microbatches.h"

#include "DataFiles.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>

using namespace distopt;
using distopt::datafiles::ScratchDir;
using distrt::DType;

namespace {

InputSpec spec(std::string name, DType dtype, distrt::Shape shape,
               int64_t valueBound = 2) {
  InputSpec s;
  s.name = std::move(name);
  s.dtype = dtype;
  s.shape = std::move(shape);
  s.valueBound = valueBound;
  return s;
}

InputRequest request(InputSpec input, int index, bool labels = false,
                     int64_t microbatch = 0, int64_t microbatches = 1,
                     int64_t batchSplit = 1) {
  InputRequest r;
  r.base = input.name;
  r.input = std::move(input);
  r.index = index;
  r.labels = labels;
  r.microbatch = microbatch;
  r.microbatches = microbatches;
  r.batchSplit = batchSplit;
  return r;
}

std::vector<int64_t> ints(const distrt::Tensor &t) {
  const int64_t *p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + t.num_elements());
}

std::vector<float> floatsOf(const distrt::Tensor &t) {
  const float *p = t.data<float>();
  return std::vector<float>(p, p + t.num_elements());
}

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

//===----------------------------------------------------------------------===//
// Token files
//===----------------------------------------------------------------------===//

/// A token file holding token i = 1000 + i for i < count.
std::string writeTokens(const ScratchDir &dir, int count) {
  std::string path = dir.path("tokens.bin");
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < count; ++i) {
    uint16_t v = static_cast<uint16_t>(1000 + i);
    out.write(reinterpret_cast<const char *>(&v), 2);
  }
  return path;
}

TEST(TokenFile, RowsFollowTheStepAndMicrobatch) {
  ScratchDir dir;
  auto source = tokenFile(writeTokens(dir, 100));
  EXPECT_EQ(source->kind(), "tokens");
  InputSpec x = spec("x", DType::kI64, {2, 3});
  // Microbatch 1 of 2 at step 2: row b starts at ((2*2 + 1)*2 + b)*3.
  std::vector<InputRequest> requests{
      request(x, 0, false, 1, 2),
      request(spec("labels", DType::kI64, {2, 3}), 0, /*labels=*/true, 1, 2)};
  auto got = source->read(2, requests);
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ(ints((*got)[0]),
            (std::vector<int64_t>{1030, 1031, 1032, 1033, 1034, 1035}));
  // Labels are the next tokens.
  EXPECT_EQ(ints((*got)[1]),
            (std::vector<int64_t>{1031, 1032, 1033, 1034, 1035, 1036}));
  // The position after 5 steps: 5 steps x 2 microbatches x 6 tokens.
  EXPECT_EQ(source->positionAfter(5, requests), 60);
}

TEST(TokenFile, ShuffledWindowsAreContiguousSeededAndCoverTheFile) {
  ScratchDir dir;
  const int n = 50, t = 4;
  auto a = tokenFile(writeTokens(dir, n), uint64_t{7});
  auto b = tokenFile(writeTokens(dir, n), uint64_t{7});
  auto c = tokenFile(writeTokens(dir, n), uint64_t{8});
  EXPECT_EQ(a->kind(), "tokens shuffled with seed 7");
  std::vector<InputRequest> requests{
      request(spec("x", DType::kI64, {8, t}), 0),
      request(spec("labels", DType::kI64, {8, t}), 0, /*labels=*/true)};
  std::set<int64_t> starts;
  int differ = 0;
  for (int64_t step = 0; step < 20; ++step) {
    auto got = a->read(step, requests);
    ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
    auto again = b->read(step, requests);
    ASSERT_TRUE(static_cast<bool>(again));
    // The same seed gives the same batches (a resume, another mesh).
    EXPECT_EQ(ints((*got)[0]), ints((*again)[0]));
    auto other = c->read(step, requests);
    ASSERT_TRUE(static_cast<bool>(other));
    differ += ints((*got)[0]) != ints((*other)[0]);
    std::vector<int64_t> x = ints((*got)[0]), y = ints((*got)[1]);
    for (int row = 0; row < 8; ++row) {
      int64_t first = x[row * t];
      // A window of consecutive tokens inside the file, its labels the
      // next tokens (token i is 1000 + i).
      EXPECT_GE(first, 1000);
      EXPECT_LE(first + t, 1000 + n - 1);
      for (int i = 0; i < t; ++i) {
        EXPECT_EQ(x[row * t + i], first + i);
        EXPECT_EQ(y[row * t + i], first + i + 1);
      }
      starts.insert(first);
    }
  }
  EXPECT_GT(differ, 15) << "another seed should draw other windows";
  // 160 draws over the 46 possible starts reach nearly all of them.
  EXPECT_GE(starts.size(), 40u);
}

TEST(TokenFile, ReadingWrapsAroundTheFile) {
  ScratchDir dir;
  auto source = tokenFile(writeTokens(dir, 10));
  // Row 0 of step 3 starts at token 3*4 = 12, which wraps to 12 % (10 - 4).
  auto got = source->read(3, {request(spec("x", DType::kI64, {1, 4}), 0)});
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  EXPECT_EQ(ints((*got)[0]), (std::vector<int64_t>{1000, 1001, 1002, 1003}));
}

TEST(TokenFile, LabelsFollowTheirRowAtTheWrap) {
  ScratchDir dir;
  auto source = tokenFile(writeTokens(dir, 10));
  // Step 2's row starts at 2*3 = 6 = N - T - 1, the last start before the
  // wrap (modulo 10 - 3); its labels are tokens 7..9, not the file's head.
  std::vector<InputRequest> requests{
      request(spec("x", DType::kI64, {1, 3}), 0),
      request(spec("labels", DType::kI64, {1, 3}), 0, /*labels=*/true)};
  auto got = source->read(2, requests);
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  EXPECT_EQ(ints((*got)[0]), (std::vector<int64_t>{1006, 1007, 1008}));
  EXPECT_EQ(ints((*got)[1]), (std::vector<int64_t>{1007, 1008, 1009}));
}

TEST(TokenFile, CheckRefusesOddByteCountsAndFilesShorterThanAStep) {
  ScratchDir dir;
  // 2 microbatches of [2, 3]: a step reads 2 * 2 * 3 + 1 = 13 tokens.
  std::vector<InputRequest> requests{
      request(spec("x", DType::kI64, {2, 3}), 0, false, 0, 2),
      request(spec("x", DType::kI64, {2, 3}), 0, false, 1, 2)};
  std::string path = writeTokens(dir, 12);
  EXPECT_EQ(errorOf(tokenFile(path)->check(requests)),
            "token file " + path +
                " holds 12 tokens; one step reads 13 (2 microbatches of 2 "
                "rows of 3 tokens, and the last row's next token)");
  EXPECT_EQ(errorOf(tokenFile(writeTokens(dir, 13))->check(requests)), "");
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.put(7);
  }
  EXPECT_EQ(errorOf(tokenFile(path)->check(requests)),
            "token file " + path +
                " holds 27 bytes, an odd count; it must hold 2-byte (uint16) "
                "tokens");
}

TEST(TokenFile, RefusesShortFilesAndOtherInputs) {
  ScratchDir dir;
  std::string path = writeTokens(dir, 4);
  auto source = tokenFile(path);
  auto shortFile =
      source->read(0, {request(spec("x", DType::kI64, {1, 4}), 0)});
  ASSERT_FALSE(static_cast<bool>(shortFile));
  EXPECT_EQ(errorOf(shortFile.takeError()),
            "token file " + path + " holds 4 tokens; a row needs 5");
  auto floatInput =
      source->read(0, {request(spec("x", DType::kF32, {1, 2}), 0)});
  ASSERT_FALSE(static_cast<bool>(floatInput));
  EXPECT_EQ(errorOf(floatInput.takeError()),
            "--tokens feeds models whose inputs and labels are int64 [batch, "
            "seq]; 'x' is f32[1, 2]");
  auto missing = tokenFile(dir.path("none.bin"))
                     ->read(0, {request(spec("x", DType::kI64, {1, 2}), 0)});
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(errorOf(missing.takeError()),
            "cannot open token file " + dir.path("none.bin"));
}

//===----------------------------------------------------------------------===//
// Training-case folders
//===----------------------------------------------------------------------===//

TEST(TrainingCaseFolder, ReadsEachStepsInputsAndLabels) {
  ScratchDir dir;
  datafiles::writeProto(dir.path("step_0/input_0.pb"),
                        datafiles::floats({2, 2}, {1, 2, 3, 4}));
  datafiles::writeProto(dir.path("step_0/labels.pb"),
                        datafiles::int64s({2}, {7, 8}));
  datafiles::writeProto(dir.path("step_1/input_0.pb"),
                        datafiles::floats({2, 2}, {5, 6, 7, 8}));
  datafiles::writeProto(dir.path("step_1/labels.pb"),
                        datafiles::int64s({2}, {9, 10}));
  auto source = trainingCaseFolder(dir.root());
  EXPECT_EQ(source->kind(), "data");
  std::vector<InputRequest> requests{
      request(spec("x", DType::kF32, {2, 2}), 0),
      request(spec("labels", DType::kI64, {2}), 0, /*labels=*/true)};
  auto step1 = source->read(1, requests);
  ASSERT_TRUE(static_cast<bool>(step1)) << errorOf(step1.takeError());
  EXPECT_EQ(floatsOf((*step1)[0]), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(ints((*step1)[1]), (std::vector<int64_t>{9, 10}));
  // The data position of a folder is the step.
  EXPECT_EQ(source->positionAfter(2, requests), 2);
}

TEST(TrainingCaseFolder, AccumulatedMicrobatchesHaveTheirOwnFolders) {
  ScratchDir dir;
  datafiles::writeProto(dir.path("step_0/micro_0/input_1.pb"),
                        datafiles::floats({1, 2}, {1, 2}));
  datafiles::writeProto(dir.path("step_0/micro_1/input_1.pb"),
                        datafiles::floats({1, 2}, {3, 4}));
  auto got =
      trainingCaseFolder(dir.root())
          ->read(0,
                 {request(spec("y", DType::kF32, {1, 2}), 1, false, 0, 2),
                  request(spec("y.mb1", DType::kF32, {1, 2}), 1, false, 1, 2)});
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  EXPECT_EQ(floatsOf((*got)[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(floatsOf((*got)[1]), (std::vector<float>{3, 4}));
}

TEST(TrainingCaseFolder, PipelineMicrobatchesAreRowsOfOneBatch) {
  ScratchDir dir;
  datafiles::writeProto(dir.path("step_0/input_0.pb"),
                        datafiles::floats({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  auto got = trainingCaseFolder(dir.root())
                 ->read(0, {request(spec("x", DType::kF32, {2, 2}), 0, false, 1,
                                    2, /*batchSplit=*/2)});
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  EXPECT_EQ(floatsOf((*got)[0]), (std::vector<float>{4, 5, 6, 7}));
}

TEST(TrainingCaseFolder, RefusesMissingAndMismatchedFiles) {
  ScratchDir dir;
  std::string input = dir.path("step_0/input_0.pb");
  datafiles::writeProto(input, datafiles::floats({2, 2}, {1, 2, 3, 4}));
  auto source = trainingCaseFolder(dir.root());
  auto wrongShape =
      source->read(0, {request(spec("x", DType::kF32, {4, 2}), 0)});
  ASSERT_FALSE(static_cast<bool>(wrongShape));
  EXPECT_EQ(errorOf(wrongShape.takeError()),
            input + " holds f32[2, 2] but 'x' is f32[4, 2]");
  auto wrongType =
      source->read(0, {request(spec("x", DType::kI64, {2, 2}), 0)});
  ASSERT_FALSE(static_cast<bool>(wrongType));
  EXPECT_EQ(errorOf(wrongType.takeError()),
            input + " holds f32[2, 2] but 'x' is i64[2, 2]");
  auto missing = source->read(1, {request(spec("x", DType::kF32, {2, 2}), 0)});
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(errorOf(missing.takeError()),
            "cannot open " + dir.path("step_1/input_0.pb"));
}

//===----------------------------------------------------------------------===//
// Input folders (dist-run --inputs)
//===----------------------------------------------------------------------===//

TEST(InputFolder, MatchesNamedFilesByNameAndOthersByPosition) {
  ScratchDir dir;
  // Named files in the other order than the inputs.
  datafiles::writeProto(dir.path("named/input_0.pb"),
                        datafiles::floats({1}, {10}, "y"));
  datafiles::writeProto(dir.path("named/input_1.pb"),
                        datafiles::floats({1}, {20}, "x"));
  std::vector<InputSpec> inputs{spec("x", DType::kF32, {1}),
                                spec("y", DType::kF32, {1})};
  auto named =
      inputFolder(dir.path("named"))->read(0, wholeBatchRequests(inputs));
  ASSERT_TRUE(static_cast<bool>(named)) << errorOf(named.takeError());
  EXPECT_EQ(floatsOf((*named)[0]), (std::vector<float>{20}));
  EXPECT_EQ(floatsOf((*named)[1]), (std::vector<float>{10}));

  datafiles::writeProto(dir.path("unnamed/input_0.pb"),
                        datafiles::floats({1}, {30}));
  datafiles::writeProto(dir.path("unnamed/input_1.pb"),
                        datafiles::floats({1}, {40}));
  auto source = inputFolder(dir.path("unnamed"));
  EXPECT_EQ(source->kind(), "inputs");
  auto unnamed = source->read(0, wholeBatchRequests(inputs));
  ASSERT_TRUE(static_cast<bool>(unnamed)) << errorOf(unnamed.takeError());
  EXPECT_EQ(floatsOf((*unnamed)[0]), (std::vector<float>{30}));
  EXPECT_EQ(floatsOf((*unnamed)[1]), (std::vector<float>{40}));

  auto missing =
      inputFolder(dir.path("none"))->read(0, wholeBatchRequests(inputs));
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(errorOf(missing.takeError()),
            "cannot open " + dir.path("none/input_0.pb"));
}

TEST(InputFolder, WholeBatchRequestsNumberTheInputs) {
  std::vector<InputSpec> inputs{spec("a", DType::kF32, {1}),
                                spec("b", DType::kI64, {2})};
  std::vector<InputRequest> r = wholeBatchRequests(inputs);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].input.name, "b");
  EXPECT_EQ(r[1].base, "b");
  EXPECT_EQ(r[1].index, 1);
  EXPECT_FALSE(r[1].labels);
  EXPECT_EQ(r[1].microbatches, 1);
}

//===----------------------------------------------------------------------===//
// Synthetic inputs
//===----------------------------------------------------------------------===//

TEST(SyntheticInputs, DrawsEveryInputInOrderFromSeedPlusBatch) {
  std::vector<InputSpec> inputs{spec("x", DType::kF32, {3}),
                                spec("ids", DType::kI64, {4}, 5),
                                spec("mask", DType::kBool, {2})};
  auto source = syntheticInputs(inputs, 40);
  EXPECT_EQ(source->kind(), "random");
  auto got = source->read(2, wholeBatchRequests(inputs));
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  // The same stream drawn here: seed 40 + batch 2.
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ((*got)[0].data<float>()[i], real(rng));
  std::uniform_int_distribution<int64_t> index(0, 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ((*got)[1].data<int64_t>()[i], index(rng));
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ((*got)[2].data<uint8_t>()[i], rng() & 1);
}

TEST(SyntheticInputs, AValueDependsOnlyOnSeedBatchAndInputs) {
  std::vector<InputSpec> inputs{spec("x", DType::kF32, {8}),
                                spec("y", DType::kF64, {8})};
  auto source = syntheticInputs(inputs, 7);
  auto all = source->read(3, wholeBatchRequests(inputs));
  auto onlyY = source->read(3, {wholeBatchRequests(inputs)[1]});
  auto again = syntheticInputs(inputs, 7)->read(3, wholeBatchRequests(inputs));
  auto next = source->read(4, wholeBatchRequests(inputs));
  ASSERT_TRUE(all && onlyY && again && next);
  auto bytes = [](const distrt::Tensor &t) {
    const char *p = static_cast<const char *>(t.raw());
    return std::string(p, p + t.byte_size());
  };
  EXPECT_EQ(bytes((*onlyY)[0]), bytes((*all)[1]));
  EXPECT_EQ(bytes((*again)[0]), bytes((*all)[0]));
  EXPECT_NE(bytes((*next)[0]), bytes((*all)[0]));
  for (int i = 0; i < 8; ++i) {
    EXPECT_GE((*all)[1].data<double>()[i], -1.0);
    EXPECT_LT((*all)[1].data<double>()[i], 1.0);
  }
}

TEST(SyntheticInputs, PipelineMicrobatchesAreRowsOfOneDevicesBatch) {
  // One device: x [8, 3]. A pipeline of 2 microbatches: x [4, 3] twice,
  // with a hyper-parameter listed between them (as a stage's program lists
  // its inputs): microbatch j gets rows [4j, 4j + 4) of the same batch.
  std::vector<InputSpec> one{spec("x", DType::kI64, {8, 3}, 50)};
  std::vector<InputSpec> piped{spec("x", DType::kI64, {4, 3}, 50),
                               spec("hyper.lr", DType::kF32, {}),
                               spec("x.mb1", DType::kI64, {4, 3}, 50)};
  auto whole = syntheticInputs(one, 9)->read(2, wholeBatchRequests(one));
  InputRequest mb0 = request(piped[0], 0, false, 0, 2, 2);
  InputRequest mb1 = request(piped[2], 0, false, 1, 2, 2);
  mb1.base = "x";
  auto parts = syntheticInputs(piped, 9)->read(2, {mb0, mb1});
  ASSERT_TRUE(whole && parts);
  ASSERT_EQ(parts->size(), 2u);
  for (int j = 0; j < 2; ++j) {
    ASSERT_EQ((*parts)[j].shape(), (distrt::Shape{4, 3}));
    for (int k = 0; k < 12; ++k)
      EXPECT_EQ((*parts)[j].data<int64_t>()[k],
                (*whole)[0].data<int64_t>()[j * 12 + k])
          << "microbatch " << j << " element " << k;
  }
}

TEST(SyntheticInputs, LabelsAreClassIdsFromTheirOwnGenerator) {
  std::vector<InputSpec> inputs{spec("x", DType::kF32, {2}),
                                spec("labels", DType::kI64, {64})};
  InputSpec labels = inputs[1];
  labels.valueBound = 3; // classes
  auto got = syntheticInputs(inputs, 5)->read(
      1, {request(inputs[0], 0), request(labels, 0, /*labels=*/true)});
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  std::mt19937_64 rng(5 * 1000003 + 1);
  std::uniform_int_distribution<int64_t> pick(0, 2);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ((*got)[1].data<int64_t>()[i], pick(rng));
}

TEST(SyntheticInputs, SixteenBitFloatsAreTheF32DrawsRounded) {
  // The same seed and input list: a bf16 or f16 model sees the numbers an
  // f32 model does, rounded to nearest even.
  std::vector<InputSpec> f32{spec("x", DType::kF32, {16})};
  auto wide = syntheticInputs(f32, 7)->read(2, wholeBatchRequests(f32));
  ASSERT_TRUE(static_cast<bool>(wide)) << errorOf(wide.takeError());
  for (DType narrow : {DType::kBF16, DType::kF16}) {
    std::vector<InputSpec> half{spec("x", narrow, {16})};
    auto got = syntheticInputs(half, 7)->read(2, wholeBatchRequests(half));
    ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
    ASSERT_EQ((*got)[0].dtype(), narrow);
    for (int i = 0; i < 16; ++i) {
      float v = (*wide)[0].data<float>()[i];
      EXPECT_EQ((*got)[0].data<uint16_t>()[i], narrow == DType::kBF16
                                                  ? distrt::FloatToBF16(v)
                                                  : distrt::FloatToHalf(v));
    }
  }
}

TEST(SyntheticInputs, RefusesDTypesItCannotDraw) {
  std::vector<InputSpec> inputs{spec("h", DType::kU16, {2})};
  auto got = syntheticInputs(inputs, 0)->read(0, wholeBatchRequests(inputs));
  ASSERT_FALSE(static_cast<bool>(got));
  EXPECT_EQ(errorOf(got.takeError()),
            "cannot generate inputs of dtype u16 for 'h'; pass --inputs");
}

//===----------------------------------------------------------------------===//
// Microbatches
//===----------------------------------------------------------------------===//

TEST(Microbatches, SplitAndConcatRoundTrip) {
  distrt::Tensor t;
  ASSERT_TRUE(distrt::Tensor::Allocate(DType::kI64, {4, 2}, &t).ok());
  for (int i = 0; i < 8; ++i)
    t.data<int64_t>()[i] = i;
  auto parts = splitBatch({{"x", t}}, 2);
  ASSERT_TRUE(static_cast<bool>(parts)) << errorOf(parts.takeError());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ(ints((*parts)[1][0].tensor), (std::vector<int64_t>{4, 5, 6, 7}));
  auto whole = concatBatch(*parts);
  ASSERT_TRUE(static_cast<bool>(whole)) << errorOf(whole.takeError());
  EXPECT_EQ(ints((*whole)[0].tensor), ints(t));
  auto uneven = splitBatch({{"x", t}}, 3);
  ASSERT_FALSE(static_cast<bool>(uneven));
  EXPECT_EQ(errorOf(uneven.takeError()),
            "input 'x' has 4 rows, which do not split into 3 microbatches");
}

} // namespace
