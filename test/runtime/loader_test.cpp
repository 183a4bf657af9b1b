// Loading and validating rank programs and packages; reading weight slices.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace distrt {
namespace {

using testing::TempDir;

// x -> relu -> y.
ProgramBuilder SimpleProgram() {
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {2, 2});
  int y = b.Apply("relu", {x}, DType::kF32, {2, 2});
  b.Output("y", y);
  return b;
}

Status CreateFrom(const proto::RankProgram& p, std::shared_ptr<const Program>* out,
                  const std::string& dir = ".") {
  return Program::Create(p, "prog.pb", dir, out);
}

TEST(Loader, LoadsASavedProgram) {
  TempDir dir;
  ASSERT_TRUE(SaveProgram(SimpleProgram().Build(), dir.File("p.pb")).ok());
  std::shared_ptr<const Program> p;
  Status st = LoadProgram(dir.File("p.pb"), &p);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(p->num_values(), 2);
  EXPECT_EQ(p->num_instructions(), 1);
  EXPECT_EQ(p->source(), dir.File("p.pb"));
  EXPECT_EQ(p->base_dir(), dir.path());
  EXPECT_FALSE(p->communicates());
}

TEST(Loader, VersionMismatchNamesBothVersionsAndProducer) {
  TempDir dir;
  proto::RankProgram p = SimpleProgram().Build();
  p.set_format_version(7);
  p.set_producer("distopt 9.9.9");
  ASSERT_TRUE(SaveProgram(p, dir.File("p.pb")).ok());
  std::shared_ptr<const Program> prog;
  Status st = LoadProgram(dir.File("p.pb"), &prog);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(st.message(), "format_version 7");
  EXPECT_HAS(st.message(), StrCat("format_version ", kFormatVersion));
  EXPECT_HAS(st.message(), "distopt 9.9.9");
  EXPECT_HAS(st.message(), dir.File("p.pb"));
}

TEST(Loader, TruncatedFileIsDataLoss) {
  TempDir dir;
  ProgramBuilder b = SimpleProgram();
  for (int i = 0; i < 20; ++i) b.proto().mutable_values(0)->set_name("a_long_name_to_pad_it");
  ASSERT_TRUE(SaveProgram(b.Build(), dir.File("p.pb")).ok());
  auto size = std::filesystem::file_size(dir.File("p.pb"));
  std::filesystem::resize_file(dir.File("p.pb"), size / 2);
  std::shared_ptr<const Program> prog;
  Status st = LoadProgram(dir.File("p.pb"), &prog);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_HAS(st.message(), dir.File("p.pb"));
  EXPECT_HAS(st.message(), "truncated");
}

TEST(Loader, FileCutAtMessageBoundaryIsCaughtByEndMark) {
  TempDir dir;
  ASSERT_TRUE(SaveProgram(SimpleProgram().Build(), dir.File("p.pb")).ok());
  // The end mark is written last: tag (2 bytes) + fixed32 (4 bytes).
  auto size = std::filesystem::file_size(dir.File("p.pb"));
  std::filesystem::resize_file(dir.File("p.pb"), size - 6);
  std::shared_ptr<const Program> prog;
  Status st = LoadProgram(dir.File("p.pb"), &prog);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_HAS(st.message(), "end mark");
  EXPECT_HAS(st.message(), dir.File("p.pb"));
}

TEST(Loader, GarbageAndMissingFiles) {
  TempDir dir;
  std::string junk = "\xff\xff\xff\xff this is not a protobuf";
  testing::WriteFile(dir.File("junk.pb"), junk.data(), junk.size());
  std::shared_ptr<const Program> prog;
  Status st = LoadProgram(dir.File("junk.pb"), &prog);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_HAS(st.message(), "junk.pb");
  st = LoadProgram(dir.File("nope.pb"), &prog);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_HAS(st.message(), "nope.pb");
}

TEST(Loader, UndeclaredValueIdNamesInstruction) {
  ProgramBuilder b = SimpleProgram();
  b.proto().mutable_instructions(0)->set_inputs(0, 99);
  b.proto().mutable_instructions(0)->set_location("Relu_7");
  std::shared_ptr<const Program> p;
  Status st = CreateFrom(b.Build(), &p);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_HAS(st.message(), "instruction 0 ('relu' at 'Relu_7')");
  EXPECT_HAS(st.message(), "%99");
  EXPECT_HAS(st.message(), "prog.pb");
}

TEST(Loader, UseBeforeDefinitionAndDoubleDefinition) {
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {2});
  int t = b.Value(DType::kF32, {2});
  int y = b.Value(DType::kF32, {2});
  b.Op("relu", {t}, {y});  // t not defined yet
  b.Op("relu", {x}, {t});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  Status st = CreateFrom(b.Build(), &p);
  EXPECT_HAS(st.message(), "before it is defined");

  ProgramBuilder c;
  int a = c.Input("a", DType::kF32, {2});
  c.Op("relu", {a}, {a});
  st = CreateFrom(c.Build(), &p);
  EXPECT_HAS(st.message(), "already defined");
}

TEST(Loader, DuplicateAndNegativeIds) {
  ProgramBuilder b = SimpleProgram();
  b.proto().mutable_values(1)->set_id(0);
  std::shared_ptr<const Program> p;
  EXPECT_HAS(CreateFrom(b.Build(), &p).message(), "declared twice");
  ProgramBuilder c = SimpleProgram();
  c.proto().mutable_values(0)->set_id(-4);
  EXPECT_HAS(CreateFrom(c.Build(), &p).message(), "negative id");
}

TEST(Loader, UnknownOpIsRejectedWithItsName) {
  ProgramBuilder b = SimpleProgram();
  b.proto().mutable_instructions(0)->set_op("frobnicate");
  std::shared_ptr<const Program> p;
  Status st = CreateFrom(b.Build(), &p);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_HAS(st.message(), "unknown op 'frobnicate'");
  EXPECT_HAS(st.message(), "instruction 0");
}

TEST(Loader, WrongArityAndShape) {
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {2, 3});
  int w = b.Input("w", DType::kF32, {4, 5});
  int y = b.Apply("matmul", {x, w}, DType::kF32, {2, 5});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  Status st = CreateFrom(b.Build(), &p);
  EXPECT_HAS(st.message(), "matmul inner dimensions differ");
  EXPECT_HAS(st.message(), "instruction 0");

  ProgramBuilder c;
  int a = c.Input("a", DType::kF32, {2});
  int r = c.Apply("add", {a}, DType::kF32, {2});
  c.Output("r", r);
  st = CreateFrom(c.Build(), &p);
  EXPECT_HAS(st.message(), "has 1 inputs, expected 2");

  ProgramBuilder d;
  int e = d.Input("e", DType::kF32, {2, 3});
  int f = d.Apply("relu", {e}, DType::kF32, {3, 2});
  d.Output("f", f);
  st = CreateFrom(d.Build(), &p);
  EXPECT_HAS(st.message(), "declares the output as f32[3, 2]");
}

TEST(Loader, GroupRanksOutOfRange) {
  ProgramBuilder b(0, 2);
  int x = b.Input("x", DType::kF32, {2});
  int y = b.Apply("all_reduce", {x}, DType::kF32, {2}, {{"reduction", AttrString("sum")}}, {0, 5});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  Status st = CreateFrom(b.Build(), &p);
  EXPECT_HAS(st.message(), "group rank 5 is outside [0, 2)");
}

TEST(Loader, RankOutsideWorld) {
  ProgramBuilder b(3, 2);
  std::shared_ptr<const Program> p;
  EXPECT_HAS(CreateFrom(b.Build(), &p).message(), "rank 3 is outside [0, 2)");
}

TEST(Loader, WeightOutsideItsFile) {
  TempDir dir;
  std::vector<float> data(4, 1.0f);  // 16 bytes
  testing::WriteFile(dir.File("w.bin"), data.data(), 16);
  ProgramBuilder b;
  int w = b.Weight("fc.weight", "w.bin", 0, DType::kF32, DType::kF32, {4, 4}, {0, 0}, {4, 4});
  b.Output("w", w);
  std::shared_ptr<const Program> p;
  Status st = CreateFrom(b.Build(), &p, dir.path());
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_HAS(st.message(), "fc.weight");
  EXPECT_HAS(st.message(), "needs bytes [0, 64)");
  EXPECT_HAS(st.message(), dir.File("w.bin"));
  EXPECT_HAS(st.message(), "has 16 bytes");
}

TEST(Loader, WeightFileMissingAndSliceOutsideGlobal) {
  TempDir dir;
  std::vector<float> data(16, 1.0f);
  testing::WriteFile(dir.File("w.bin"), data.data(), 64);
  std::shared_ptr<const Program> p;
  ProgramBuilder b;
  b.Weight("a", "missing.bin", 0, DType::kF32, DType::kF32, {4}, {0}, {4});
  Status st = CreateFrom(b.Build(), &p, dir.path());
  EXPECT_HAS(st.message(), "missing.bin");
  ProgramBuilder c;
  c.Weight("b", "w.bin", 0, DType::kF32, DType::kF32, {4, 4}, {3, 0}, {2, 4});
  st = CreateFrom(c.Build(), &p, dir.path());
  EXPECT_HAS(st.message(), "exceed global shape");
  ProgramBuilder d;
  d.Weight("c", "w.bin", 0, DType::kF32, DType::kI64, {4}, {0}, {4});
  st = CreateFrom(d.Build(), &p, dir.path());
  EXPECT_HAS(st.message(), "stored as f32 but its value is i64[4]");
}

TEST(Loader, ConstantSizeMismatch) {
  ProgramBuilder b;
  int c = b.Constant(testing::F32({3}, {1, 2, 3}));
  b.Output("c", c);
  b.proto().mutable_constants(0)->mutable_tensor()->mutable_data()->resize(8);
  std::shared_ptr<const Program> p;
  EXPECT_HAS(CreateFrom(b.Build(), &p).message(), "has 8 data bytes, expected 12");
}

// Weights: only the slice is read, from the right offset, converted as needed.
TEST(Weights, ReadsOnlyTheSliceAtAnOffset) {
  TempDir dir;
  // File: 12 junk bytes, then a 4x6 f32 tensor with value 10*row + col.
  std::vector<uint8_t> file(12, 0xAB);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 6; ++c) {
      float v = static_cast<float>(10 * r + c);
      const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
      file.insert(file.end(), p, p + 4);
    }
  }
  std::filesystem::create_directory(dir.File("data"));
  testing::WriteFile(dir.File("data/model.bin"), file.data(), file.size());
  ProgramBuilder b;
  int w = b.Weight("w", "data/model.bin", 12, DType::kF32, DType::kF32, {4, 6}, {1, 2}, {2, 3});
  b.Output("w", w);
  ASSERT_TRUE(SaveProgram(b.Build(), dir.File("rank-0.pb")).ok());
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(LoadProgram(dir.File("rank-0.pb"), &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({}, &out).ok());
  testing::ExpectF32(out[0], {2, 3}, {12, 13, 14, 22, 23, 24});
  EXPECT_EQ(e->stats().weight_bytes, 24);
}

TEST(Weights, HalfAndBFloat16ConvertToF32OrStay) {
  TempDir dir;
  std::vector<uint16_t> halfs = {FloatToHalf(1.5f), FloatToHalf(-2.0f), FloatToHalf(0.25f),
                                 FloatToHalf(8.0f)};
  std::vector<uint16_t> bf = {FloatToBF16(3.0f), FloatToBF16(-0.5f)};
  testing::WriteFile(dir.File("h.bin"), halfs.data(), 8);
  testing::WriteFile(dir.File("b.bin"), bf.data(), 4);
  ProgramBuilder b;
  int h32 = b.Weight("h32", dir.File("h.bin"), 0, DType::kF16, DType::kF32, {4}, {1}, {3});
  int h16 = b.Weight("h16", dir.File("h.bin"), 0, DType::kF16, DType::kF16, {2, 2}, {1, 0}, {1, 2});
  int b32 = b.Weight("b32", "b.bin", 0, DType::kBF16, DType::kF32, {2}, {0}, {2});
  b.Output("h32", h32);
  b.Output("h16", h16);
  b.Output("b32", b32);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "mem", dir.path(), &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({}, &out).ok());
  testing::ExpectF32(out[0], {3}, {-2.0f, 0.25f, 8.0f});
  ASSERT_EQ(out[1].dtype(), DType::kF16);
  EXPECT_EQ(HalfToFloat(out[1].data<uint16_t>()[0]), 0.25f);
  EXPECT_EQ(HalfToFloat(out[1].data<uint16_t>()[1]), 8.0f);
  testing::ExpectF32(out[2], {2}, {3.0f, -0.5f});
}

TEST(Package, LoadsProgramsAndChecksRanks) {
  TempDir dir;
  proto::Package pkg;
  pkg.set_world_size(2);
  pkg.set_producer("test");
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    int x = b.Input("x", DType::kF32, {2});
    int y = b.Apply("neg", {x}, DType::kF32, {2});
    b.Output("y", y);
    ASSERT_TRUE(SaveProgram(b.Build(), dir.File(StrCat("rank-", r, ".pb"))).ok());
    pkg.add_program_files(StrCat("rank-", r, ".pb"));
  }
  ASSERT_TRUE(SavePackage(pkg, dir.File("package.pb")).ok());
  Package loaded;
  Status st = LoadPackage(dir.path(), &loaded);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(loaded.programs.size(), 2u);
  EXPECT_EQ(loaded.programs[1]->rank(), 1);

  // Swap the files: rank 0's slot now holds rank 1's program.
  pkg.set_program_files(0, "rank-1.pb");
  ASSERT_TRUE(SavePackage(pkg, dir.File("package.pb")).ok());
  st = LoadPackage(dir.path(), &loaded);
  EXPECT_HAS(st.message(), "listed as rank 0 of 2");
  EXPECT_HAS(st.message(), "says rank 1 of 2");
}

}  // namespace
}  // namespace distrt
