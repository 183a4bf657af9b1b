//===- ModelReaderTest.cpp - the wire-format reader and robustness -------===//
//
// The reader finds each initializer's raw_data in the file without the
// generated classes holding the bytes; these tests compare its offsets with
// a full generated-class parse, and check that truncated or corrupted files
// give errors, never crashes.
//
//===----------------------------------------------------------------------===//
#include "TestModels.h"

#include "distopt/Import/ModelReader.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <random>

using namespace importtest;
using distopt::onnximport::LoadedModel;
using distopt::onnximport::readModel;
using distopt::onnximport::readModelFromBuffer;

namespace {

std::string fileBytes(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return {};
  return (*buffer)->getBuffer().str();
}

/// Every initializer's raw_data, as the generated classes parse it, is at
/// the reader's offset; the reader's model holds no raw_data bytes.
void expectOffsetsMatch(const std::string &path) {
  SCOPED_TRACE(path);
  std::string bytes = fileBytes(path);
  ASSERT_FALSE(bytes.empty());
  onnx::ModelProto full;
  ASSERT_TRUE(full.ParseFromString(bytes));

  llvm::Expected<LoadedModel> loaded = readModel(path);
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  const onnx::GraphProto &g = loaded->model.graph();
  ASSERT_EQ(g.initializer_size(), full.graph().initializer_size());
  ASSERT_EQ(loaded->rawData.size(),
            static_cast<size_t>(full.graph().initializer_size()));
  int withRaw = 0;
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto &want = full.graph().initializer(i);
    const onnx::TensorProto &got = g.initializer(i);
    SCOPED_TRACE(want.name());
    EXPECT_EQ(got.name(), want.name());
    EXPECT_EQ(got.data_type(), want.data_type());
    EXPECT_EQ(got.dims_size(), want.dims_size());
    EXPECT_FALSE(got.has_raw_data());
    EXPECT_EQ(loaded->rawData[i].present, want.has_raw_data());
    if (!want.has_raw_data())
      continue;
    ++withRaw;
    const auto &ref = loaded->rawData[i];
    ASSERT_EQ(ref.length, want.raw_data().size());
    ASSERT_LE(ref.offset + ref.length, bytes.size());
    EXPECT_EQ(0, std::memcmp(bytes.data() + ref.offset, want.raw_data().data(),
                             ref.length));
    llvm::ArrayRef<char> view = loaded->rawBytes(i);
    EXPECT_EQ(std::string(view.data(), view.size()), want.raw_data());
  }
  EXPECT_GT(withRaw, 0);
  // Everything but the initializers' bytes survives the reader.
  onnx::ModelProto stripped = full;
  for (auto &t : *stripped.mutable_graph()->mutable_initializer())
    t.clear_raw_data();
  EXPECT_EQ(stripped.SerializeAsString(), loaded->model.SerializeAsString());
}

} // namespace

TEST(ImportModelReader, OffsetsMatchGeneratedParseOnExportedModels) {
  for (const char *m :
       {"models/mlp_op13/model.onnx", "models/gpt_op17/model.onnx",
        "models/bert_op13_dyn/model.onnx", "models/llama_op17/model.onnx",
        "onnx/gemm.onnx"})
    expectOffsetsMatch(testData(m));
}

TEST(ImportModelReader, OffsetsOfMixedInitializers) {
  TestModel m;
  m.input("x", onnx::TensorProto::FLOAT, {int64_t(2), int64_t(3)});
  m.rawFloats("a", {3}, {1, 2, 3});
  m.typedInts("shape", {2}, {3, 2});
  m.rawFloats("b", {2}, {4, 5});
  onnx::TensorProto &empty = *m.graph->add_initializer();
  empty.set_name("empty");
  empty.set_data_type(onnx::TensorProto::FLOAT);
  empty.add_dims(0);
  empty.set_raw_data("");
  m.node("Relu", {"x"}, {"y"});
  m.output("y", onnx::TensorProto::FLOAT, {int64_t(2), int64_t(3)});
  std::string path = writeModel("mixed.onnx", m.model);
  expectOffsetsMatch(path);

  llvm::Expected<LoadedModel> loaded = readModel(path);
  ASSERT_TRUE(static_cast<bool>(loaded));
  EXPECT_TRUE(loaded->rawData[0].present);
  EXPECT_FALSE(loaded->rawData[1].present);
  EXPECT_EQ(loaded->model.graph().initializer(1).int64_data_size(), 2);
  EXPECT_TRUE(loaded->rawData[3].present);
  EXPECT_EQ(loaded->rawData[3].length, 0u);
}

TEST(ImportModelReader, ClearErrors) {
  auto fromBytes = [](const std::string &bytes) {
    return readModelFromBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(bytes, "test.onnx"), "test.onnx");
  };
  {
    auto r = fromBytes("");
    ASSERT_FALSE(static_cast<bool>(r));
    EXPECT_NE(llvm::toString(r.takeError()).find("the model has no graph"),
              std::string::npos);
  }
  {
    auto r = fromBytes("not a model");
    ASSERT_FALSE(static_cast<bool>(r));
    EXPECT_NE(llvm::toString(r.takeError()).find("not a valid ONNX model"),
              std::string::npos);
  }
  {
    auto r = readModel(tempDir() + "/does-not-exist.onnx");
    ASSERT_FALSE(static_cast<bool>(r));
    EXPECT_NE(llvm::toString(r.takeError()).find("cannot read"),
              std::string::npos);
  }
}

// Truncating a real model anywhere gives an error, never a crash or a model.
TEST(ImportRobustness, TruncatedModelsAreErrors) {
  std::string bytes = fileBytes(testData("models/gpt_op17/model.onnx"));
  ASSERT_GT(bytes.size(), 10000u);
  std::vector<size_t> cuts = {0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233};
  for (size_t i = 1; i < 120; ++i)
    cuts.push_back(bytes.size() * i / 120);
  for (size_t back = 1; back <= 64; ++back)
    cuts.push_back(bytes.size() - back);
  for (size_t cut : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    ImportResult r = importFile(writeFile("cut.onnx", bytes.substr(0, cut)));
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.diagnostics.empty());
  }
}

// Random byte corruption: an error or a valid module, never a crash.
TEST(ImportRobustness, CorruptedModelsDoNotCrash) {
  std::string bytes = fileBytes(testData("models/mlp_op17/model.onnx"));
  ASSERT_FALSE(bytes.empty());
  std::mt19937 rng(1234);
  int failures = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string copy = bytes;
    int flips = 1 + rng() % 4;
    // Half the time hit the structure (nodes come first, opsets last)
    // rather than weight bytes.
    size_t head = std::min<size_t>(copy.size(), 4096);
    for (int f = 0; f < flips; ++f) {
      size_t at = iter % 2    ? rng() % copy.size()
                  : rng() % 3 ? rng() % head
                              : copy.size() - 1 - rng() % 256;
      copy[at] = static_cast<char>(rng());
    }
    ImportResult r = importFile(writeFile("corrupt.onnx", copy));
    if (!r.ok) {
      ++failures;
      EXPECT_FALSE(r.diagnostics.empty());
    }
  }
  // Most flips land in weight bytes and leave a valid model; some do not.
  EXPECT_GT(failures, 0);
}
