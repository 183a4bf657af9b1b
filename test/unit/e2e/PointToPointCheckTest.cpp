//===- PointToPointCheckTest.cpp - every send has its receive ---*- C++ -*-===//
#include "distopt/Session/PointToPointCheck.h"
#include "distopt/Session/RankPrograms.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

using namespace distopt;
namespace proto = distrt::proto;

namespace {

/// A program for `rank` of 2 whose instructions are sends/receives of an
/// f32[4] value with the given (op, peer, tag) list.
std::shared_ptr<const distrt::Program>
program(int rank, std::vector<std::tuple<std::string, int, int>> messages,
        int elements = 4) {
  proto::RankProgram p;
  p.set_format_version(distrt::kFormatVersion);
  p.set_rank(rank);
  p.set_world_size(2);
  p.set_end_mark(distrt::kEndMark);
  int32_t next = 0;
  auto value = [&](int n) {
    proto::Value *v = p.add_values();
    v->set_id(next);
    v->mutable_type()->set_dtype(proto::F32);
    v->mutable_type()->add_shape(n);
    return next++;
  };
  int32_t x = value(4);
  proto::Constant *c = p.add_constants();
  c->set_value(x);
  *c->mutable_tensor()->mutable_type() = p.values(0).type();
  c->mutable_tensor()->set_data(std::string(16, '\0'));
  for (auto [op, peer, tag] : messages) {
    proto::Instruction *inst = p.add_instructions();
    inst->set_op(op);
    if (op == "send")
      inst->add_inputs(x);
    else
      inst->add_outputs(value(elements));
    (*inst->mutable_attrs())["peer"].set_i(peer);
    (*inst->mutable_attrs())["tag"].set_i(tag);
  }
  std::shared_ptr<const distrt::Program> out;
  distrt::Status st = distrt::Program::Create(p, "test", ".", &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(PointToPointCheckTest, MatchingSendsAndReceivesPass) {
  Programs ps{program(0, {{"send", 1, 3}, {"send", 1, 4}}),
              program(1, {{"recv", 0, 3}, {"recv", 0, 4}})};
  EXPECT_FALSE(static_cast<bool>(checkPointToPoint(ps)));
}

TEST(PointToPointCheckTest, AReceiveNobodySends) {
  Programs ps{program(0, {{"send", 1, 3}}),
              program(1, {{"recv", 0, 3}, {"recv", 0, 9}})};
  llvm::Error err = checkPointToPoint(ps);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err))
                .find("rank 1 receives tag 9 from rank 0, which never sends "
                      "it"),
            std::string::npos);
}

TEST(PointToPointCheckTest, ReceivingInAnotherOrderPasses) {
  // Messages are matched by tag: a receive may come before an earlier send's.
  Programs ps{program(0, {{"send", 1, 3}, {"send", 1, 4}}),
              program(1, {{"recv", 0, 4}, {"recv", 0, 3}})};
  EXPECT_FALSE(static_cast<bool>(checkPointToPoint(ps)));
}

TEST(PointToPointCheckTest, ASendNobodyReceives) {
  Programs ps{program(0, {{"send", 1, 3}, {"send", 1, 5}}),
              program(1, {{"recv", 0, 3}})};
  llvm::Error err = checkPointToPoint(ps);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err))
                .find("rank 0 sends tag 5 to rank 1, which never receives it"),
            std::string::npos);
}

TEST(PointToPointCheckTest, SizeMismatchIsReported) {
  Programs ps{program(0, {{"send", 1, 3}}), program(1, {{"recv", 0, 3}}, 8)};
  llvm::Error err = checkPointToPoint(ps);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("sends tag 3 (16 bytes) to rank 1, which expects 32 bytes"),
            std::string::npos);
}

} // namespace

TEST(SavePackageTest, WrittenProgramsLoadBack) {
  Programs ps{program(0, {{"send", 1, 3}}), program(1, {{"recv", 0, 3}})};
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("save-package", dir));
  ASSERT_FALSE(static_cast<bool>(savePackage(ps, dir)));
  distrt::Package loaded;
  distrt::Status st = distrt::LoadPackage(dir.str().str(), &loaded);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(loaded.programs.size(), 2u);
  EXPECT_EQ(loaded.proto.program_files(1), "rank-1.pb");
  EXPECT_EQ(loaded.programs[1]->num_instructions(), 1);
  EXPECT_EQ(loaded.programs[0]->proto().instructions(0).op(), "send");
  llvm::sys::fs::remove_directories(dir);
}
