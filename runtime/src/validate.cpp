// Program::Create: load-time validation of a rank program.
#include <algorithm>
#include <map>
#include <set>

#include "distrt/program.h"
#include "file_util.h"
#include "kernel.h"
#include "via_f32.h"

namespace distrt {

class ProgramValidator {
 public:
  ProgramValidator(Program* p) : p_(*p), proto_(p->proto_) {}

  Status Run() {
    if (proto_.world_size() < 1) return Error("world_size ", proto_.world_size(), " must be >= 1");
    if (proto_.rank() < 0 || proto_.rank() >= proto_.world_size()) {
      return Error("rank ", proto_.rank(), " is outside [0, ", proto_.world_size(), ")");
    }
    DISTRT_RETURN_IF_ERROR(Values());
    DISTRT_RETURN_IF_ERROR(Weights());
    DISTRT_RETURN_IF_ERROR(Constants());
    DISTRT_RETURN_IF_ERROR(Arguments(/*inputs=*/true));
    DISTRT_RETURN_IF_ERROR(Instructions());
    DISTRT_RETURN_IF_ERROR(Loops());
    DISTRT_RETURN_IF_ERROR(Arguments(/*inputs=*/false));
    DISTRT_RETURN_IF_ERROR(Updates());
    return OkStatus();
  }

 private:
  template <typename... Args>
  Status Error(const Args&... args) {
    return InvalidArgumentError(p_.source_, ": ", args...);
  }

  Status Values() {
    p_.values_.reserve(static_cast<size_t>(proto_.values_size()));
    for (int i = 0; i < proto_.values_size(); ++i) {
      const proto::Value& v = proto_.values(i);
      ValueInfo info;
      info.id = v.id();
      info.name = v.name();
      info.type = FromProto(v.type());
      if (v.id() < 0) return Error("value ", i, " has negative id ", v.id());
      if (!IsValidDType(static_cast<int>(info.type.dtype))) {
        return Error("value %", v.id(), " has invalid dtype ", static_cast<int>(info.type.dtype));
      }
      if (NumElements(info.type.shape) < 0) {
        return Error("value %", v.id(), " has invalid shape ", ShapeToString(info.type.shape));
      }
      p_.values_.push_back(std::move(info));
      p_.id_to_index_.emplace_back(v.id(), i);
    }
    std::sort(p_.id_to_index_.begin(), p_.id_to_index_.end());
    for (size_t i = 1; i < p_.id_to_index_.size(); ++i) {
      if (p_.id_to_index_[i].first == p_.id_to_index_[i - 1].first) {
        return Error("value id %", p_.id_to_index_[i].first, " is declared twice");
      }
    }
    defined_.assign(p_.values_.size(), false);
    computed_.assign(p_.values_.size(), false);
    return OkStatus();
  }

  // Resolves a value id used by `what`; `define`: it must not be defined yet.
  Status Ref(int32_t id, const std::string& what, bool define, int* index) {
    int idx = p_.ValueIndex(id);
    if (idx < 0) {
      return Error(what, " refers to value %", id, ", which is not declared (",
                   proto_.values_size(), " values)");
    }
    if (define) {
      if (defined_[static_cast<size_t>(idx)]) {
        return Error(what, " defines ", p_.DescribeValue(idx), ", which is already defined");
      }
      defined_[static_cast<size_t>(idx)] = true;
    } else if (!defined_[static_cast<size_t>(idx)]) {
      return Error(what, " uses ", p_.DescribeValue(idx), " before it is defined");
    }
    *index = idx;
    return OkStatus();
  }

  Status Weights() {
    std::map<std::string, uint64_t> sizes;
    for (int i = 0; i < proto_.weights_size(); ++i) {
      const proto::Weight& w = proto_.weights(i);
      const std::string what = StrCat("weight ", i, " '", w.name(), "'");
      int idx = -1;
      DISTRT_RETURN_IF_ERROR(Ref(w.value(), what, true, &idx));
      const TensorType& vt = p_.values_[static_cast<size_t>(idx)].type;
      DType wd = static_cast<DType>(w.dtype());
      // A zeros weight has no stored form: its dtype may be left unspecified.
      if (w.zeros() && wd == DType::kUnspecified) wd = vt.dtype;
      if (!IsValidDType(static_cast<int>(wd))) {
        return Error(what, " has invalid dtype ", static_cast<int>(wd));
      }
      // f32, f16 and bf16 convert into each other at load (rounding to
      // nearest even when narrowing).
      auto f32_or_half = [](DType d) {
        return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16;
      };
      bool convertible = wd == vt.dtype || (!w.zeros() && f32_or_half(vt.dtype) && f32_or_half(wd));
      if (!convertible) {
        return Error(what, " is stored as ", DTypeName(wd), " but its value is ", vt.ToString());
      }
      SliceInfo s;
      Status st = ResolveSlice(w.slice(), vt.shape, &s);
      if (!st.ok()) return Error(what, ": ", st.message());
      if (w.zeros()) {
        // Starts as zeros: nothing to read, so a file would be a contradiction.
        if (!w.file().empty()) {
          return Error(what, " is zeros but names file '", w.file(),
                       "' (a zeros weight has no file)");
        }
        p_.weight_paths_.emplace_back();
        continue;
      }
      if (w.file().empty()) return Error(what, " has no file (and is not zeros)");
      std::string path = JoinPath(p_.base_dir_, w.file());
      auto it = sizes.find(path);
      if (it == sizes.end()) {
        uint64_t size = 0;
        Status fs = GetFileSize(path, &size);
        if (!fs.ok()) return Error(what, ": ", fs.message());
        it = sizes.emplace(path, size).first;
      }
      int64_t n = NumElements(s.global_shape);
      if (n < 0) return Error(what, " has invalid global shape ", ShapeToString(s.global_shape));
      uint64_t bytes = static_cast<uint64_t>(n) * DTypeSize(wd);
      if (w.offset() > it->second || bytes > it->second - w.offset()) {
        return Status(
            StatusCode::kOutOfRange,
            StrCat(p_.source_, ": ", what, " needs bytes [", w.offset(), ", ", w.offset() + bytes,
                   ") of '", path, "', but the file has ", it->second, " bytes"));
      }
      p_.weight_paths_.push_back(path);
    }
    return OkStatus();
  }

  Status Constants() {
    for (int i = 0; i < proto_.constants_size(); ++i) {
      const proto::Constant& c = proto_.constants(i);
      const std::string what = StrCat("constant ", i);
      int idx = -1;
      DISTRT_RETURN_IF_ERROR(Ref(c.value(), what, true, &idx));
      const TensorType& vt = p_.values_[static_cast<size_t>(idx)].type;
      TensorType ct = FromProto(c.tensor().type());
      if (ct != vt) {
        return Error(what, " has type ", ct.ToString(), " but its value is ", vt.ToString());
      }
      size_t want = static_cast<size_t>(NumElements(vt.shape)) * DTypeSize(vt.dtype);
      if (c.tensor().data().size() != want) {
        return Error(what, " (", vt.ToString(), ") has ", c.tensor().data().size(),
                     " data bytes, expected ", want);
      }
    }
    return OkStatus();
  }

  Status Arguments(bool inputs) {
    const auto& args = inputs ? proto_.inputs() : proto_.outputs();
    for (int i = 0; i < args.size(); ++i) {
      const proto::Argument& a = args.Get(i);
      const std::string what = StrCat(inputs ? "input " : "output ", i, " '", a.name(), "'");
      int idx = -1;
      DISTRT_RETURN_IF_ERROR(Ref(a.value(), what, inputs, &idx));
      const TensorType& vt = p_.values_[static_cast<size_t>(idx)].type;
      if (a.dtype() != proto::DTYPE_UNSPECIFIED && static_cast<DType>(a.dtype()) != vt.dtype) {
        return Error(what, " has dtype ", DTypeName(static_cast<DType>(a.dtype())),
                     " but its value is ", vt.ToString());
      }
      SliceInfo s;
      Status st = ResolveSlice(a.slice(), vt.shape, &s);
      if (!st.ok()) return Error(what, ": ", st.message());
      st = CheckChunkOrder(a.chunk_order(), s.global_shape);
      if (!st.ok()) return Error(what, ": ", st.message());
      (inputs ? p_.input_values_ : p_.output_values_).push_back(idx);
    }
    return OkStatus();
  }

  Status Instructions() {
    const KernelRegistry& reg = KernelRegistry::Get();
    const int n = proto_.instructions_size();
    p_.inst_inputs_.resize(static_cast<size_t>(n));
    p_.inst_outputs_.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const proto::Instruction& inst = proto_.instructions(i);
      const std::string what = p_.DescribeInstruction(i);
      const KernelDef* def = reg.Find(inst.op());
      if (def == nullptr) {
        return Status(StatusCode::kUnimplemented,
                      StrCat(p_.source_, ": ", what, ": unknown op '", inst.op(),
                             "' (not a distrt kernel; see docs/rank-program.md)"));
      }
      const int nin = inst.inputs_size();
      if (nin < def->min_inputs || (def->max_inputs >= 0 && nin > def->max_inputs)) {
        std::string want = def->max_inputs < 0 ? StrCat("at least ", def->min_inputs)
                           : def->min_inputs == def->max_inputs
                               ? StrCat(def->min_inputs)
                               : StrCat(def->min_inputs, "..", def->max_inputs);
        return Error(what, " has ", nin, " inputs, expected ", want);
      }
      if (def->num_outputs >= 0 && inst.outputs_size() != def->num_outputs) {
        return Error(what, " has ", inst.outputs_size(), " outputs, expected ", def->num_outputs);
      }
      VerifyContext vc;
      vc.inst = &inst;
      vc.rank = proto_.rank();
      vc.world_size = proto_.world_size();
      for (int k = 0; k < nin; ++k) {
        int idx = -1;
        DISTRT_RETURN_IF_ERROR(Ref(inst.inputs(k), StrCat(what, " input ", k), false, &idx));
        p_.inst_inputs_[static_cast<size_t>(i)].push_back(idx);
        vc.inputs.push_back(p_.values_[static_cast<size_t>(idx)].type);
      }
      for (int k = 0; k < inst.outputs_size(); ++k) {
        int idx = -1;
        DISTRT_RETURN_IF_ERROR(Ref(inst.outputs(k), StrCat(what, " output ", k), true, &idx));
        p_.inst_outputs_[static_cast<size_t>(i)].push_back(idx);
        computed_[static_cast<size_t>(idx)] = true;
        vc.outputs.push_back(p_.values_[static_cast<size_t>(idx)].type);
      }
      std::set<int> seen;
      for (int r : inst.group().ranks()) {
        if (r < 0 || r >= proto_.world_size()) {
          return Error(what, ": group rank ", r, " is outside [0, ", proto_.world_size(), ")");
        }
        if (!seen.insert(r).second) return Error(what, ": group lists rank ", r, " twice");
      }
      if (def->communicates) p_.communicates_ = true;
      if (def->verify) {
        // A bf16/f16 instruction of a kernel written for f32 is checked as
        // the f32 instruction the executor will run.
        Status st = RunsViaF32(*def, vc) ? VerifyViaF32(*def, vc) : def->verify(vc);
        if (!st.ok()) return Error(what, ": ", st.message());
      }
    }
    return OkStatus();
  }

  // Each microbatch_loop is closed by the microbatch_yield that names it,
  // with one running sum per input; loops do not nest, the index is read
  // only by microbatch_select, and action markers sit in scheduled loops
  // (whose schedule the executor checks: scheduled_loop.h).
  Status Loops() {
    p_.running_sum_of_.assign(static_cast<size_t>(proto_.instructions_size()), -1);
    int open = -1;
    for (int i = 0; i < proto_.instructions_size(); ++i) {
      const proto::Instruction& inst = proto_.instructions(i);
      const std::string what = p_.DescribeInstruction(i);
      if (inst.op() == "microbatch_loop") {
        if (open >= 0) return Error(what, " starts a loop inside the loop of instruction ", open);
        open = i;
      } else if (inst.op() == "microbatch_yield") {
        int64_t loop = -1;
        (void)AttrReader(inst).GetInt("loop", &loop);
        if (open < 0 || loop != open) {
          return Error(what, " closes loop ", loop, ", but ",
                       open < 0 ? std::string("no loop is open")
                                : StrCat("the open loop is instruction ", open));
        }
        const std::vector<int>& sums = p_.inst_outputs_[static_cast<size_t>(open)];
        const std::vector<int>& next = p_.inst_inputs_[static_cast<size_t>(i)];
        if (sums.size() != next.size() + 1) {
          return Error(what, " yields ", next.size(), " sums for a loop with ", sums.size() - 1);
        }
        for (size_t k = 0; k < next.size(); ++k)
          if (p_.values_[static_cast<size_t>(next[k])].type !=
              p_.values_[static_cast<size_t>(sums[k + 1])].type) {
            return Error(what, " input ", k, " is not typed as the loop's running sum ",
                         p_.DescribeValue(sums[k + 1]));
          }
        DISTRT_RETURN_IF_ERROR(RunningSumAdds(open, i));
        open = -1;
      } else if (inst.op() == "microbatch_action" &&
                 (open < 0 || !proto_.instructions(open).attrs().count("schedule"))) {
        return Error(what, " is outside a microbatch loop with a schedule");
      } else if (inst.op() == "microbatch_select" &&
                 (open < 0 || p_.inst_inputs_[static_cast<size_t>(i)][0] !=
                                  p_.inst_outputs_[static_cast<size_t>(open)][0])) {
        return Error(what, " does not read the index of an open microbatch loop");
      }
    }
    if (open >= 0) return Error(p_.DescribeInstruction(open), " is never closed");
    return OkStatus();
  }

  // The loop [begin, end]'s sums that an `add` in its body updates: the add
  // reads the running sum first and its result is what the yield carries
  // into that sum. Such a sum takes the add's result when the add runs, so
  // nothing else in the body may read it.
  Status RunningSumAdds(int begin, int end) {
    const std::vector<int>& sums = p_.inst_outputs_[static_cast<size_t>(begin)];
    const std::vector<int>& next = p_.inst_inputs_[static_cast<size_t>(end)];
    std::map<int, int> defined_at;  // the body's values
    for (int i = begin + 1; i < end; ++i)
      for (int v : p_.inst_outputs_[static_cast<size_t>(i)]) defined_at[v] = i;
    std::set<int> updated;
    for (size_t k = 0; k < next.size(); ++k) {
      auto it = defined_at.find(next[k]);
      if (it == defined_at.end()) continue;
      const int i = it->second;
      const std::vector<int>& in = p_.inst_inputs_[static_cast<size_t>(i)];
      if (proto_.instructions(i).op() == "add" && in.size() == 2 && in[0] == sums[k + 1] &&
          p_.running_sum_of_[static_cast<size_t>(i)] < 0 && updated.insert(in[0]).second)
        p_.running_sum_of_[static_cast<size_t>(i)] = sums[k + 1];
    }
    // The sum takes the add's result: only the yield, at that sum, reads it.
    std::map<int, int> taken;  // the adds' results, by the sum they become
    for (int i = begin + 1; i < end; ++i)
      if (p_.running_sum_of_[static_cast<size_t>(i)] >= 0)
        taken[p_.inst_outputs_[static_cast<size_t>(i)][0]] =
            p_.running_sum_of_[static_cast<size_t>(i)];
    for (int i = begin + 1; i <= end; ++i) {
      const std::vector<int>& in = p_.inst_inputs_[static_cast<size_t>(i)];
      for (size_t k = 0; k < in.size(); ++k) {
        if (updated.count(in[k]) &&
            !(k == 0 && p_.running_sum_of_[static_cast<size_t>(i)] == in[k]))
          return Error(p_.DescribeInstruction(i), " reads the running sum ",
                       p_.DescribeValue(in[k]), ", which only the add that updates it may read");
        auto t = taken.find(in[k]);
        if (t != taken.end() && !(i == end && sums[k + 1] == t->second))
          return Error(p_.DescribeInstruction(i), " reads ", p_.DescribeValue(in[k]),
                       ", which becomes the running sum ", p_.DescribeValue(t->second),
                       " when made; only the yield may carry it");
      }
    }
    return OkStatus();
  }

  // Weight.update: a value an instruction computes, of the weight's own
  // local type (the executor copies it into the weight after each run).
  Status Updates() {
    for (int i = 0; i < proto_.weights_size(); ++i) {
      const proto::Weight& w = proto_.weights(i);
      if (!w.has_update()) continue;
      const std::string what = StrCat("weight ", i, " '", w.name(), "'");
      const int widx = p_.ValueIndex(w.value());
      const int uidx = p_.ValueIndex(w.update());
      if (uidx < 0) {
        return Error(what, " has update %", w.update(), ", which is not declared (",
                     proto_.values_size(), " values)");
      }
      if (!computed_[static_cast<size_t>(uidx)]) {
        const char* kind = "never defined";
        if (std::find(p_.input_values_.begin(), p_.input_values_.end(), uidx) !=
            p_.input_values_.end()) {
          kind = "a program input";
        } else if (defined_[static_cast<size_t>(uidx)]) {
          kind = "a weight or constant";
        }
        return Error(what, " has update ", p_.DescribeValue(uidx), ", which is ", kind,
                     ", not a value an instruction computes");
      }
      const TensorType& wt = p_.values_[static_cast<size_t>(widx)].type;
      const TensorType& ut = p_.values_[static_cast<size_t>(uidx)].type;
      if (wt != ut) {
        return Error(what, " is ", wt.ToString(), " but its update ", p_.DescribeValue(uidx),
                     " has another type");
      }
      p_.updates_.push_back({i, widx, uidx});
    }
    return OkStatus();
  }

  Program& p_;
  const proto::RankProgram& proto_;
  std::vector<bool> defined_;
  std::vector<bool> computed_;  // defined by an instruction
};

Status Program::Create(proto::RankProgram proto, const std::string& source,
                       const std::string& base_dir, std::shared_ptr<const Program>* out) {
  std::shared_ptr<Program> p(new Program());
  p->proto_ = std::move(proto);
  p->source_ = source.empty() ? "<memory>" : source;
  p->base_dir_ = base_dir;
  ProgramValidator v(p.get());
  DISTRT_RETURN_IF_ERROR(v.Run());
  *out = std::move(p);
  return OkStatus();
}

}  // namespace distrt
