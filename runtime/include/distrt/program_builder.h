// ProgramBuilder: assembles a RankProgram message in code (tests, tools,
// hand-written programs). It does no validation; Program::Create does.
#ifndef DISTRT_PROGRAM_BUILDER_H_
#define DISTRT_PROGRAM_BUILDER_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "distrt/program.h"

namespace distrt {

// Attribute constructors: AttrInt(3), AttrInts({0, 1}), ...
proto::Attribute AttrInt(int64_t v);
proto::Attribute AttrFloat(double v);
proto::Attribute AttrString(const std::string& v);
proto::Attribute AttrInts(const std::vector<int64_t>& v);
proto::Attribute AttrFloats(const std::vector<double>& v);

class ProgramBuilder {
 public:
  explicit ProgramBuilder(int rank = 0, int world_size = 1);

  // Declares a value; returns its id.
  int Value(DType dtype, const Shape& shape, const std::string& name = "");
  // Declares a value and makes it a program input (slice: full tensor unless given).
  int Input(const std::string& name, DType dtype, const Shape& shape);
  int Input(const std::string& name, DType dtype, const Shape& shape, const proto::Slice& slice);
  // Marks a value as a program output.
  void Output(const std::string& name, int value);
  void Output(const std::string& name, int value, const proto::Slice& slice);
  // A constant with inline bytes.
  int Constant(const Tensor& t, const std::string& name = "");
  // A weight read from `file` at `offset` (full tensor of `global_shape` stored
  // as `stored`), of which this rank holds the window offsets/sizes.
  int Weight(const std::string& name, const std::string& file, uint64_t offset, DType stored,
             DType value_dtype, const Shape& global_shape, const Shape& offsets,
             const Shape& sizes);
  // A weight with no file that starts as zeros (optimizer state); this rank
  // holds the window offsets/sizes of `global_shape`.
  int ZerosWeight(const std::string& name, DType dtype, const Shape& global_shape,
                  const Shape& offsets, const Shape& sizes);
  // After each run, `update`'s contents become weight `weight`'s (both value
  // ids; `weight` must have been declared by Weight or ZerosWeight).
  void SetUpdate(int weight, int update);
  // Appends an instruction; returns it for attributes / group.
  proto::Instruction& Op(
      const std::string& op, const std::vector<int>& inputs, const std::vector<int>& outputs,
      std::initializer_list<std::pair<const std::string, proto::Attribute>> attrs = {},
      const std::vector<int>& group = {});
  // Convenience: declares the output value and appends the instruction.
  int Apply(const std::string& op, const std::vector<int>& inputs, DType dtype, const Shape& shape,
            std::initializer_list<std::pair<const std::string, proto::Attribute>> attrs = {},
            const std::vector<int>& group = {});

  proto::RankProgram& proto() { return p_; }
  // The message with format_version and end_mark set.
  proto::RankProgram Build() const;

 private:
  proto::RankProgram p_;
  int next_id_ = 0;
};

proto::Slice MakeSlice(const Shape& global_shape, const Shape& offsets, const Shape& sizes);

}  // namespace distrt

#endif  // DISTRT_PROGRAM_BUILDER_H_
