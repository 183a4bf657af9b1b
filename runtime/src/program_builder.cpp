#include "distrt/program_builder.h"

namespace distrt {

proto::Attribute AttrInt(int64_t v) {
  proto::Attribute a;
  a.set_i(v);
  return a;
}
proto::Attribute AttrFloat(double v) {
  proto::Attribute a;
  a.set_f(v);
  return a;
}
proto::Attribute AttrString(const std::string& v) {
  proto::Attribute a;
  a.set_s(v);
  return a;
}
proto::Attribute AttrInts(const std::vector<int64_t>& v) {
  proto::Attribute a;
  auto* l = a.mutable_ints();
  for (int64_t x : v) l->add_values(x);
  return a;
}
proto::Attribute AttrFloats(const std::vector<double>& v) {
  proto::Attribute a;
  auto* l = a.mutable_floats();
  for (double x : v) l->add_values(x);
  return a;
}

proto::Slice MakeSlice(const Shape& global_shape, const Shape& offsets, const Shape& sizes) {
  proto::Slice s;
  for (int64_t d : global_shape) s.add_global_shape(d);
  for (int64_t d : offsets) s.add_offsets(d);
  for (int64_t d : sizes) s.add_sizes(d);
  return s;
}

ProgramBuilder::ProgramBuilder(int rank, int world_size) {
  p_.set_format_version(kFormatVersion);
  p_.set_producer("distrt ProgramBuilder");
  p_.set_rank(rank);
  p_.set_world_size(world_size);
}

int ProgramBuilder::Value(DType dtype, const Shape& shape, const std::string& name) {
  proto::Value* v = p_.add_values();
  v->set_id(next_id_);
  v->set_name(name);
  ToProto(TensorType{dtype, shape}, v->mutable_type());
  return next_id_++;
}

int ProgramBuilder::Input(const std::string& name, DType dtype, const Shape& shape) {
  return Input(name, dtype, shape, MakeSlice(shape, Shape(shape.size(), 0), shape));
}

int ProgramBuilder::Input(const std::string& name, DType dtype, const Shape& shape,
                          const proto::Slice& slice) {
  int id = Value(dtype, shape, name);
  proto::Argument* a = p_.add_inputs();
  a->set_name(name);
  a->set_value(id);
  a->set_dtype(static_cast<proto::DType>(dtype));
  *a->mutable_slice() = slice;
  return id;
}

void ProgramBuilder::Output(const std::string& name, int value) {
  proto::Argument* a = p_.add_outputs();
  a->set_name(name);
  a->set_value(value);
}

void ProgramBuilder::Output(const std::string& name, int value, const proto::Slice& slice) {
  Output(name, value);
  *p_.mutable_outputs(p_.outputs_size() - 1)->mutable_slice() = slice;
}

int ProgramBuilder::Constant(const Tensor& t, const std::string& name) {
  int id = Value(t.dtype(), t.shape(), name);
  proto::Constant* c = p_.add_constants();
  c->set_value(id);
  ToProto(t.type(), c->mutable_tensor()->mutable_type());
  c->mutable_tensor()->set_data(std::string(static_cast<const char*>(t.raw()), t.byte_size()));
  return id;
}

int ProgramBuilder::Weight(const std::string& name, const std::string& file, uint64_t offset,
                           DType stored, DType value_dtype, const Shape& global_shape,
                           const Shape& offsets, const Shape& sizes) {
  int id = Value(value_dtype, sizes, name);
  proto::Weight* w = p_.add_weights();
  w->set_value(id);
  w->set_name(name);
  w->set_file(file);
  w->set_offset(offset);
  w->set_dtype(static_cast<proto::DType>(stored));
  *w->mutable_slice() = MakeSlice(global_shape, offsets, sizes);
  return id;
}

int ProgramBuilder::ZerosWeight(const std::string& name, DType dtype, const Shape& global_shape,
                                const Shape& offsets, const Shape& sizes) {
  int id = Value(dtype, sizes, name);
  proto::Weight* w = p_.add_weights();
  w->set_value(id);
  w->set_name(name);
  w->set_zeros(true);
  w->set_dtype(static_cast<proto::DType>(dtype));
  *w->mutable_slice() = MakeSlice(global_shape, offsets, sizes);
  return id;
}

void ProgramBuilder::SetUpdate(int weight, int update) {
  for (proto::Weight& w : *p_.mutable_weights()) {
    if (w.value() == weight) w.set_update(update);
  }
}

proto::Instruction& ProgramBuilder::Op(
    const std::string& op, const std::vector<int>& inputs, const std::vector<int>& outputs,
    std::initializer_list<std::pair<const std::string, proto::Attribute>> attrs,
    const std::vector<int>& group) {
  proto::Instruction* inst = p_.add_instructions();
  inst->set_op(op);
  for (int v : inputs) inst->add_inputs(v);
  for (int v : outputs) inst->add_outputs(v);
  for (const auto& kv : attrs) (*inst->mutable_attrs())[kv.first] = kv.second;
  for (int r : group) inst->mutable_group()->add_ranks(r);
  return *inst;
}

int ProgramBuilder::Apply(
    const std::string& op, const std::vector<int>& inputs, DType dtype, const Shape& shape,
    std::initializer_list<std::pair<const std::string, proto::Attribute>> attrs,
    const std::vector<int>& group) {
  int out = Value(dtype, shape);
  Op(op, inputs, {out}, attrs, group);
  return out;
}

proto::RankProgram ProgramBuilder::Build() const {
  proto::RankProgram p = p_;
  p.set_format_version(kFormatVersion);
  p.set_end_mark(kEndMark);
  return p;
}

}  // namespace distrt
