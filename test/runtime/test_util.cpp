#include "test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace distrt {
namespace testing {

Status RunOp(const std::string& op, const std::vector<Tensor>& inputs,
             const std::vector<TensorType>& out_types, Attrs attrs,
             std::vector<Tensor>* outputs, int threads) {
  ProgramBuilder b;
  std::vector<int> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(b.Input("in" + std::to_string(i), inputs[i].dtype(), inputs[i].shape()));
  }
  for (size_t i = 0; i < out_types.size(); ++i) {
    outs.push_back(b.Value(out_types[i].dtype, out_types[i].shape));
    b.Output("out" + std::to_string(i), outs.back());
  }
  b.Op(op, ins, outs, attrs);
  std::shared_ptr<const Program> prog;
  DISTRT_RETURN_IF_ERROR(Program::Create(b.Build(), "<test>", ".", &prog));
  ExecutorOptions options;
  options.threads = threads;
  std::unique_ptr<Executor> exec;
  DISTRT_RETURN_IF_ERROR(Executor::Create(prog, nullptr, options, &exec));
  return exec->Run(inputs, outputs);
}

Tensor Run1(const std::string& op, const std::vector<Tensor>& inputs,
                const TensorType& out_type, Attrs attrs, int threads) {
  std::vector<Tensor> outs;
  Status st = RunOp(op, inputs, {out_type}, attrs, &outs, threads);
  EXPECT_TRUE(st.ok()) << op << ": " << st.ToString();
  if (!st.ok() || outs.size() != 1) return Tensor();
  return outs[0];
}

Tensor Bool(const Shape& shape, const std::vector<int>& v) {
  Tensor t;
  EXPECT_TRUE(Tensor::Allocate(DType::kBool, shape, &t).ok());
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), v.size());
  for (size_t i = 0; i < v.size(); ++i) t.data<uint8_t>()[i] = v[i] ? 1 : 0;
  return t;
}

Tensor Iota(const Shape& shape, float scale, float offset) {
  Tensor t;
  EXPECT_TRUE(Tensor::Allocate(DType::kF32, shape, &t).ok());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.data<float>()[i] = static_cast<float>(i) * scale + offset;
  }
  return t;
}

void ExpectF32(const Tensor& t, const Shape& shape, const std::vector<float>& expected,
               float tol) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.dtype(), DType::kF32);
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(t.num_elements()), expected.size());
  const float* d = t.data<float>();
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(d[i])) << "element " << i;
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(d[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(d[i], expected[i], tol * (1.0f + std::fabs(expected[i]))) << "element " << i;
    }
  }
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "distrt_test_XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* p = ::mkdtemp(buf.data());
  EXPECT_NE(p, nullptr);
  path_ = p ? p : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  ASSERT_TRUE(out.good()) << path;
}

}  // namespace testing
}  // namespace distrt
