// Rank programs: loading, validating and saving the protobuf format described
// in docs/rank-program.md.
#ifndef DISTRT_PROGRAM_H_
#define DISTRT_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distrt/proto/rank_program.pb.h"
#include "distrt/status.h"
#include "distrt/tensor.h"

namespace distrt {

// The only format_version this runtime reads. Bump on any change an older
// reader could misread. 2: Weight.update and Weight.zeros (training state),
// which a version-1 reader would silently ignore.
constexpr uint32_t kFormatVersion = 2;
// RankProgram.end_mark / Package.end_mark must hold this ("DRTE").
constexpr uint32_t kEndMark = 0x44525445u;

struct ValueInfo {
  int32_t id = -1;  // the id used in the file
  TensorType type;
  std::string name;  // source name, may be empty
};

// A parsed and validated rank program. Immutable and shareable between
// executors. Values are renumbered densely (index = position in
// proto().values()), instructions refer to them by index.
class Program {
 public:
  // Validates `proto` (see docs/rank-program.md, "Validation"). `source` names
  // the program in messages (its file, or e.g. "<memory>"); relative weight
  // files resolve against `base_dir`.
  static Status Create(proto::RankProgram proto, const std::string& source,
                       const std::string& base_dir, std::shared_ptr<const Program>* out);

  const proto::RankProgram& proto() const { return proto_; }
  const std::string& source() const { return source_; }
  const std::string& base_dir() const { return base_dir_; }
  int rank() const { return proto_.rank(); }
  int world_size() const { return proto_.world_size(); }

  int num_values() const { return static_cast<int>(values_.size()); }
  const ValueInfo& value(int index) const { return values_[static_cast<size_t>(index)]; }
  // Dense index of a value id, or -1.
  int ValueIndex(int32_t id) const;
  // "%7 'name' f32[2, 3]" for messages.
  std::string DescribeValue(int index) const;

  int num_instructions() const { return proto_.instructions_size(); }
  const std::vector<int>& InstructionInputs(int i) const { return inst_inputs_[i]; }
  const std::vector<int>& InstructionOutputs(int i) const { return inst_outputs_[i]; }
  // "instruction 5 ('matmul' at 'MatMul_3')"
  std::string DescribeInstruction(int i) const;
  // Resolved path of weight i's file ("" for a zeros weight).
  const std::string& WeightPath(int i) const { return weight_paths_[i]; }
  // Weights with an update: (weight index, dense value index of the weight,
  // dense value index of its update), in weight order.
  struct WeightUpdate {
    int weight = -1;
    int value = -1;
    int update = -1;
  };
  const std::vector<WeightUpdate>& updates() const { return updates_; }
  // Dense value index of input / output argument i.
  int InputValue(int i) const { return input_values_[i]; }
  int OutputValue(int i) const { return output_values_[i]; }
  // True if any instruction communicates.
  bool communicates() const { return communicates_; }
  // The running sum (a dense value index) that instruction i updates when
  // it runs, or -1: an `add` of a microbatch loop's running sum and a value
  // of the body, whose result the loop's yield carries into that sum
  // (docs/rank-program.md, "Microbatch loops").
  int RunningSumOf(int i) const { return running_sum_of_[static_cast<size_t>(i)]; }

 private:
  friend class ProgramValidator;
  Program() = default;
  proto::RankProgram proto_;
  std::string source_, base_dir_;
  std::vector<ValueInfo> values_;
  std::vector<std::pair<int32_t, int>> id_to_index_;  // sorted by id
  std::vector<std::vector<int>> inst_inputs_, inst_outputs_;
  std::vector<std::string> weight_paths_;
  std::vector<int> input_values_, output_values_;
  std::vector<WeightUpdate> updates_;
  std::vector<int> running_sum_of_;  // per instruction
  bool communicates_ = false;
};

// Reads, parses and validates one rank program file.
Status LoadProgram(const std::string& path, std::shared_ptr<const Program>* out);

// A package directory: package.pb plus one program per rank.
struct Package {
  proto::Package proto;
  std::string dir;
  std::vector<std::shared_ptr<const Program>> programs;  // index = rank
};
Status LoadPackage(const std::string& dir, Package* out);

// Writes a program / package file, filling in end_mark (and format_version
// when it is 0).
Status SaveProgram(const proto::RankProgram& program, const std::string& path);
Status SavePackage(const proto::Package& package, const std::string& path);

// The slice an argument or weight describes, filled in for a rank-0 value or
// an empty Slice message (= the whole tensor).
struct SliceInfo {
  Shape global_shape, offsets, sizes;
  bool IsFull() const { return sizes == global_shape; }
};
// Checks `slice` against the local shape and returns it with defaults filled.
Status ResolveSlice(const proto::Slice& slice, const Shape& local_shape, SliceInfo* out);

// An argument's ChunkOrder checked against its global shape: `dim` inside
// it, the chunks a permutation of 0..n-1 whose n divides the extent. An
// absent order (no chunks) is fine.
Status CheckChunkOrder(const proto::ChunkOrder& order, const Shape& global_shape);

// `global` with dimension order.dim rearranged from the global order into the
// program's (to_program) or back. `out` is a new tensor of the same type.
Status ReorderChunks(const Tensor& global, const proto::ChunkOrder& order, bool to_program,
                     Tensor* out);

TensorType FromProto(const proto::TensorType& t);
void ToProto(const TensorType& t, proto::TensorType* out);

}  // namespace distrt

#endif  // DISTRT_PROGRAM_H_
